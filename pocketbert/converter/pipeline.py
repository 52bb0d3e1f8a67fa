"""The conversion: options checked, then the stages in order over one record, in a staging directory.

    result = convert(ConvertOptions(checkpoint="minilm", out=Path("bundles/minilm"), opts="int8"))

The stages (converter/stages/) load, transform, export, quantize, embed metadata, verify and bundle;
each declares the parts of the :class:`~pocketbert.converter.conversion.Conversion` record it reads and
the part it produces, and the order is checked against those declarations before anything runs.
Progress is told through events (converter/events.py), never printed here.  Any error leaves no bundle:
the staging directory is swapped into place only by the last stage.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .conversion import GIVEN, PARTS, ArtifactResult, Conversion, ConvertResult
from .events import Listener, ignore
from .options import ConvertOptions, plan
from .stages import STAGES, Stage
from .stages.base import check_order, check_produced
from .output.staging import Staging

__all__ = ["ArtifactResult", "ConvertOptions", "ConvertResult", "convert"]


def convert(options: ConvertOptions, events: Listener | None = None, *,
            stages: Sequence[Stage] = STAGES) -> ConvertResult:
    """``stages``: the converter's own unless a test plants others."""
    check_order(stages, GIVEN, PARTS)  # a wiring bug is refused before any slow work
    conversion = Conversion(options, plan(options), Staging(options.out, options.overwrite), events or ignore)
    threads = torch.get_num_threads()
    try:
        with conversion.staging:
            for stage in stages:
                before = conversion.produced()
                stage.run(conversion)
                check_produced(stage, before, conversion.produced())
    finally:  # the load stage sets PyTorch's threads to --threads: a caller's own setting is theirs again after
        torch.set_num_threads(threads)
    return conversion.result()
