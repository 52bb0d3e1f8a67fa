"""What both task pipelines share: the bundle, its tokenizer, a backend, batching and the model check."""

from __future__ import annotations

import threading

import numpy as np

from . import batching
from .backends import Backend
from .bundle import Artifact, Bundle
from .choice import Choice
from .errors import Error, ModelError
from .tokenization import TextEncoder

DEFAULT_BATCH_SIZE = 16


def softmax(logits: np.ndarray) -> np.ndarray:
    """Over the last axis, in float32, as Hugging Face's pipelines compute it (max-shifted exp)."""
    logits = logits.astype(np.float32, copy=False)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


class Pipeline:
    """A loaded bundle, callable on texts.  Create with :func:`runtime.load`; safe to share between threads."""

    task: str

    def __init__(self, bundle: Bundle, artifact: Artifact, backend: Backend, encoder: TextEncoder,
                 batch_size: int | None = None, choice: Choice | None = None):
        self.bundle = bundle
        self.artifact = artifact
        self.choice = choice or Choice(artifact.recipe, "pinned", "given by the caller")
        self.backend = backend
        self.encoder = encoder
        self.labels = bundle.labels
        self.batch_size = max(1, batch_size or DEFAULT_BATCH_SIZE)
        self.max_length = encoder.max_length
        self._warned = False
        self._warn_lock = threading.Lock()
        self._check_model()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.bundle.path.name} {self.artifact.recipe} "
                f"[{self.backend.describe()}] labels={len(self.labels)} max_length={self.max_length}>")

    def info(self) -> dict:
        """What runs: the bundle, the artifact and backend, and why this artifact (``choice``: rule, reason,
        measured milliseconds per artifact, the cache file holding the choice)."""
        return {"bundle": str(self.bundle.path), "task": self.task, "recipe": self.artifact.recipe,
                "backend": self.backend.describe(), "precision": self.artifact.precision,
                "max_length": self.max_length, "batch_size": self.batch_size, "choice": self.choice.to_json()}

    def _warn_once(self) -> bool:
        with self._warn_lock:
            first, self._warned = not self._warned, True
        return first

    def _check_model(self) -> None:
        """Run the model once on [CLS] <highest token id> [SEP]: proves the file runs, that every id the
        tokenizer can produce is inside the model's embedding table, and that it has one logit per label."""
        specials = [i for i in (self.encoder.cls_id, self.encoder.sep_id) if i is not None]
        top = self.encoder.vocab_size - 1

        def probe(ids: list[int]) -> np.ndarray:
            return self.backend.run(batching.pad([(ids, [0] * len(ids))], self.bundle.input_names,
                                                 self.encoder.pad_id), quiet=True)

        try:
            out = probe(specials[:1] + [top] + specials[1:])
        except Exception as exc:
            try:
                probe(specials or [0])
            except Exception as plain:
                raise ModelError(f"{self.artifact.file} fails to run in {self.backend.name}: {plain}",
                                 "the model file is damaged or does not match the manifest; convert again") from plain
            raise ModelError(f"the tokenizer has {self.encoder.vocab_size} tokens but {self.artifact.file} rejects "
                             f"token id {top}: the tokenizer and the model do not belong together",
                             "use the tokenizer.json the bundle was converted with, or convert again") from exc
        self._check_limits(probe, specials)
        expected = 2 if self.task == "classification" else 3
        if out.ndim != expected or out.shape[-1] != len(self.labels):
            raise ModelError(f"{self.artifact.file} outputs logits of shape {list(out.shape)}, but a {self.task} "
                             f"model with {len(self.labels)} labels must give [batch, "
                             f"{'' if expected == 2 else 'sequence, '}{len(self.labels)}]",
                             "the model file does not belong to this manifest/labels.txt; convert again")

    def _check_limits(self, probe, specials: list[int]) -> None:
        """The manifest's pad id and maximum length against the model's own tables: out of range, they would
        fail only at the first batch that pads, or the first long text, with no hint of the cause."""
        pad = self.encoder.pad_id
        try:
            probe(specials[:1] + [pad] + specials[1:])
        except Exception as exc:
            raise ModelError(f"the bundle's pad token id {pad} is outside the embedding table of "
                             f"{self.artifact.file}", "the manifest's tokenizer.special_tokens.pad does not belong "
                             "to this model; convert again") from exc
        try:
            probe(specials[:1] + [pad] * (self.max_length - len(specials)) + specials[1:])
        except Exception as exc:
            raise ModelError(f"{self.artifact.file} cannot take {self.max_length} tokens, the bundle's maximum "
                             "(max_sequence_length): its position embeddings are shorter",
                             "set max_sequence_length to the model's maximum, or convert again") from exc

    def _logits(self, rows: list[tuple[list[int], list[int]]]) -> list[np.ndarray]:
        """Token rows -> logits per row, in order: batches of similar length, each padded to its longest."""
        out: list[np.ndarray | None] = [None] * len(rows)
        size = min(self.batch_size, self.backend.max_batch or self.batch_size)
        for batch in batching.plan([len(ids) for ids, _ in rows], size, self.backend.buckets):
            feeds = batching.pad([rows[i] for i in batch], self.bundle.input_names, self.encoder.pad_id)
            try:
                logits = self.backend.run(feeds)
            except Error:
                raise
            except Exception as exc:  # inputs were validated and the model probed: this is a bug
                raise ModelError(f"{self.backend.name} failed on a batch of shape "
                                 f"{list(feeds['input_ids'].shape)}: {exc}",
                                 "please report it with the input that caused it") from exc
            for j, i in enumerate(batch):
                out[i] = logits[j] if logits.ndim == 2 else logits[j, :len(rows[i][0])]
        return out
