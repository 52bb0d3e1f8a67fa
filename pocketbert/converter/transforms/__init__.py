"""Operational optimisations applied to the PyTorch model, one module each.

Every transform takes ``(model, family)``, edits the model in place and returns a
:class:`TransformReport`.  Whether a transform changes what the model computes is reported, not
assumed: the pipeline measures the effect on real sentences (see :mod:`converter.verify`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class TransformReport:
    name: str
    sites: int  # places the transform looked at
    changed: int  # places it changed
    exact: bool  # True when the change cannot alter the function (up to float rounding)
    details: list[str] = field(default_factory=list)

    @property
    def noop(self) -> bool:
        return self.changed == 0

    def to_json(self) -> dict:
        data = asdict(self)
        data["details"] = data["details"][:20]  # keep manifests readable for 24-layer models
        return data


from . import fold, nonorm, relu  # noqa: E402

#: name -> transform function, in the order the pipeline applies them
TRANSFORMS = {
    "nonorm": nonorm.apply,
    "relu": relu.apply,
    "fold": fold.apply,
}
