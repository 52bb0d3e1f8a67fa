"""The ``--opt`` names, registered once with the properties every stage asks about.

    opts = parse_opts("relu,nonorm,int8")   # Opts(('nonorm', 'relu', 'int8')): canonical order
    opts.changing                           # ('nonorm', 'relu'): change what the model computes
    opts.quantizes                          # True

``--opt`` is parsed here and nowhere else; the pipeline, the loader, the recovery job and the recipe
choice read these properties instead of comparing names.  ``Opts`` is a tuple of the names, so it
is written to manifests and model cards as a plain list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .errors import ConverterInputError


@dataclass(frozen=True)
class Opt:
    name: str
    help: str
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


#: in the order they are applied
REGISTRY: tuple[Opt, ...] = (
    Opt("nonorm", "LayerNorm -> NoNorm (x*γ+β) in the encoder", changes_function=True, structural=True),
    Opt("relu", "GELU -> ReLU in the feed-forward blocks", changes_function=True, structural=True),
    Opt("fold", "fold NoNorm γ/β into the preceding Linear/embeddings where exact", exact=True,
        action="Folding NoNorm into neighbouring layers", compared="folded vs unfolded"),
    Opt("int8", "int8 quantisation (see --int8 for dynamic/static)", quantization=True),
)
BY_NAME = {opt.name: opt for opt in REGISTRY}
NAMES = tuple(BY_NAME)
HELP = {opt.name: opt.help for opt in REGISTRY}
#: what a checkpoint's config.json may record (converter.loading re-applies them on load)
STRUCTURAL = tuple(opt.name for opt in REGISTRY if opt.structural)


class Opts(tuple):
    """Parsed ``--opt``: known names, each once, in the order they are applied."""

    def __new__(cls, names: Iterable[str] = ()):
        names = list(names)
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise ConverterInputError(f"unknown --opt {', '.join(repr(n) for n in unknown)}",
                             f"valid optimisations: {', '.join(NAMES)} (comma-separated, e.g. --opt nonorm,relu,int8)")
        return super().__new__(cls, (n for n in NAMES if n in names))

    def _having(self, prop: str) -> tuple[str, ...]:
        return tuple(n for n in self if getattr(BY_NAME[n], prop))

    @property
    def changing(self) -> tuple[str, ...]:
        return self._having("changes_function")

    @property
    def structural(self) -> tuple[str, ...]:
        return self._having("structural")

    @property
    def exact(self) -> tuple[str, ...]:
        return self._having("exact")

    @property
    def quantizes(self) -> bool:
        return bool(self._having("quantization"))

    @property
    def only_structural(self) -> bool:
        """Nothing but structural transforms (what ``recover`` trains), and at least one."""
        return bool(self) and self.structural == tuple(self)


def parse_opts(text: str | None) -> Opts:
    """'relu,nonorm' -> Opts(('nonorm', 'relu')); unknown names are an ConverterInputError."""
    return Opts(n.strip().lower() for n in (text or "").split(",") if n.strip())
