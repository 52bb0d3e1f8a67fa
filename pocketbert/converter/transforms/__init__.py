"""The ``--opt`` optimisations, one module each, which registers its :class:`Opt`: its name, its
properties (what every stage asks instead of comparing names) and, for a rewrite of the PyTorch model,
its ``apply``.  Every module of this package is found by :class:`~runtime.registry.Registry`; the
helpers the int8 stage uses (``equalize``, ``smoothquant``) register nothing.

Every rewrite takes ``(model, family)``, edits the model in place and returns a
:class:`TransformReport`.  Whether a transform changes what the model computes is reported, not
assumed: the pipeline measures the effect on real sentences (see :mod:`converter.checks.verify`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from pocketbert.runtime.registry import Registry


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


@dataclass(frozen=True)
class Opt:
    """One ``--opt`` name and the properties every stage reads."""

    name: str
    help: str
    #: place in the order of application (the pipeline applies and lists opts by it)
    order: int
    #: changes what the model computes (measured on real text; refused unless recovered or accepted)
    changes_function: bool = False
    #: trained into a checkpoint by ``recover``: recorded in config.json and re-applied when it is loaded
    structural: bool = False
    #: exact rewrite of the PyTorch model, checked against the unrewritten one
    exact: bool = False
    #: what the progress line says while it is applied; its report's check line names the two sides
    action: str = ""
    compared: str = ""
    #: a quantisation of the exported model, not an edit of the PyTorch model
    quantization: bool = False
    #: the export backends it works with; empty: every one
    backends: tuple[str, ...] = ()
    #: ``(model, family) -> TransformReport``, editing the model in place; None for a quantisation
    apply: Callable[..., TransformReport] | None = field(default=None, compare=False)


#: every ``--opt``, in the order they are applied
OPTS: Registry[Opt] = Registry("--opt", __name__)
register = OPTS.register
