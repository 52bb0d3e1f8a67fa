"""The interface every runtime backend implements: named int64 inputs -> float32 logits."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class Backend(ABC):
    """One loaded model file.  :meth:`run` may be called from several threads at once."""

    name: str
    #: longest sequence the model file accepts (None: only the manifest's maximum applies)
    max_length: int | None = None
    #: most rows one call runs at once (None: any); the pipeline batches accordingly
    max_batch: int | None = None
    #: fixed input lengths the file runs (None: any length); the pipeline never puts rows of two
    #: buckets in one batch, so a row runs in the bucket it would run in alone
    buckets: list[int] | None = None

    @abstractmethod
    def run(self, feeds: dict[str, np.ndarray], quiet: bool = False) -> np.ndarray:
        """``input_ids``/``attention_mask``/(``token_type_ids``) int64 ``[batch, seq]`` -> float32 logits,
        ``[batch, labels]`` or ``[batch, seq, labels]``.  ``quiet``: an expected failure (the load-time
        probe) should not be logged by the backend."""

    def describe(self) -> str:
        return self.name
