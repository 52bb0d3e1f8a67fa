"""The ``--opt`` names, registered once with the properties every stage asks about.

    opts = parse_opts("relu,nonorm,int8")   # Opts(('nonorm', 'relu', 'int8')): canonical order
    opts.changing                           # ('nonorm', 'relu'): change what the model computes
    opts.quantizes                          # True

``--opt`` is parsed here and nowhere else; the pipeline, the loader, the recovery job and the recipe
choice read these properties instead of comparing names.  Each name is declared, with its properties,
by its own module in converter/transforms/ (:class:`~converter.transforms.Opt`).  ``Opts`` is a tuple
of the names, so it is written to manifests and model cards as a plain list.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ConverterInputError
from .transforms import OPTS, Opt


def names() -> tuple[str, ...]:
    """Every ``--opt`` name, in the order they are applied."""
    return OPTS.names()


def help_texts() -> dict[str, str]:
    return {opt.name: opt.help for opt in OPTS}


def structural_names() -> tuple[str, ...]:
    """What a checkpoint's config.json may record (converter.checkpoints.loading re-applies them on load)."""
    return tuple(opt.name for opt in OPTS if opt.structural)


class Opts(tuple):
    """Parsed ``--opt``: known names, each once, in the order they are applied."""

    def __new__(cls, names: Iterable[str] = ()):
        names = list(names)
        unknown = [n for n in names if n not in OPTS]
        if unknown:
            raise ConverterInputError(f"unknown --opt {', '.join(repr(n) for n in unknown)}",
                                      f"valid optimisations: {', '.join(OPTS.names())} (comma-separated, e.g. --opt "
                                      "nonorm,relu,int8)")
        return super().__new__(cls, (n for n in OPTS.names() if n in names))

    def _having(self, prop: str) -> tuple[str, ...]:
        return tuple(n for n in self if getattr(OPTS[n], prop))

    @property
    def declared(self) -> tuple[Opt, ...]:
        return tuple(OPTS[n] for n in self)

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
