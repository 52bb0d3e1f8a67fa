"""The conversion: options checked, then the stages in order over one record, in a staging directory.

    result = convert(ConvertOptions(checkpoint="minilm", out=Path("bundles/minilm"), opts="int8"))

The stages (converter/stages/) load, transform, export, quantize, embed metadata, verify and bundle;
each reads and extends the :class:`~pocketbert.converter.conversion.Conversion` record.  Progress is
told through events (converter/events.py), never printed here.  Any error leaves no bundle: the
staging directory is swapped into place only by the last stage.
"""

from __future__ import annotations

from .conversion import ArtifactResult, Conversion, ConvertResult
from .events import Listener, ignore
from .options import ConvertOptions, plan
from .stages import STAGES
from .staging import Staging

__all__ = ["ArtifactResult", "ConvertOptions", "ConvertResult", "convert"]


def convert(options: ConvertOptions, events: Listener | None = None) -> ConvertResult:
    conversion = Conversion(options, plan(options), Staging(options.out, options.overwrite), events or ignore)
    with conversion.staging:
        for stage in STAGES:
            stage.run(conversion)
    return conversion.result()
