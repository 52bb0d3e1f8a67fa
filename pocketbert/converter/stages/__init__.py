"""The conversion's stages, in the order they run; each is one module holding one :class:`Stage`.

    load -> transform -> export -> quantize -> metadata -> verify -> bundle

Every stage takes the :class:`~pocketbert.converter.conversion.Conversion` record, reads the parts it
declares (``reads``: what was given, what earlier stages produced) and sets the part it declares
(``produces``), as ExecuTorch's ``Stage.run(artifact)``.  The pipeline checks this order against the
declarations before it runs anything (stages/base.py ``check_order``).
"""

from __future__ import annotations

from .base import Stage
from .bundle import BundleStage
from .export import ExportStage
from .load import LoadStage
from .metadata import MetadataStage
from .quantize import QuantizeStage
from .transform import TransformStage
from .verify import VerifyStage

STAGES: tuple[Stage, ...] = (LoadStage(), TransformStage(), ExportStage(), QuantizeStage(), MetadataStage(),
                             VerifyStage(), BundleStage())

__all__ = ["STAGES", "Stage"]
