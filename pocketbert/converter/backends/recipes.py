"""Named recipes, ``backend:precision``: the names the CLI, the manifest and the benchmarks share.

They are read from the export backends (converter/backends/): every precision a backend declares is a
recipe, so a new backend or precision needs no line here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pocketbert.runtime.contract import TASKS  # noqa: F401  (the CLI's --task choices)

from . import EXPORT_BACKENDS
from ..errors import ConverterInputError
from ..opts import Opts
from ..sizes import parse_size  # noqa: F401  (read here before sizes.py existed)

INT8_METHODS = ("dynamic", "static")
#: --int8 values: auto builds every int8 method and keeps the fastest that passes verification
INT8_CHOICES = ("auto", *INT8_METHODS, "all")


@dataclass(frozen=True)
class Recipe:
    backend: str
    precision: str
    description: str

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.precision}"

    @property
    def quantized(self) -> bool:
        """Made from the float export by a quantiser (fp16 included)."""
        return self.precision != "fp32"

    @property
    def kind(self) -> str:
        """How it is verified: "fp32" (parity), "fp16" (near-parity), "int8" (agreement: every integer
        precision, int4 included, is held to the int8 bars and built by the same accuracy ladder)."""
        return "int8" if self.precision.startswith(("int8", "int4")) else self.precision


@dataclass(frozen=True)
class RecipeChoice:
    """``--int8 auto``: build every candidate, ship the fastest that passes the int8 bar."""

    candidates: tuple[Recipe, ...]

    @property
    def name(self) -> str:
        return f"{self.candidates[0].backend}:int8-auto"


@dataclass(frozen=True)
class Fit(RecipeChoice):
    """``--max-size``: the most accurate candidate whose file fits ``max_bytes`` and passes its bar."""

    max_bytes: int = 0

    @property
    def name(self) -> str:
        return f"{self.candidates[0].backend}:max-size-{self.max_bytes / 1e6:g}MB"


def formats() -> tuple[str, ...]:
    """The --format names: every export backend, in the runtime's ``auto`` order."""
    return EXPORT_BACKENDS.names()


def recipes() -> dict[str, Recipe]:
    """Every recipe by name, backends in :func:`formats` order, each backend's precisions in its order."""
    return {f"{b.name}:{p}": Recipe(b.name, p, description) for b in EXPORT_BACKENDS
            for p, description in b.precisions.items()}


def default_formats() -> str:
    """What is exported without --format or --recipe: every format."""
    return ",".join(formats())


def parse_formats(text: str | None) -> list[str]:
    known = formats()
    names = [n.strip().lower() for n in (text or default_formats()).split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConverterInputError(f"unknown --format {', '.join(repr(n) for n in unknown) or repr(text)}",
                                  f"valid formats: {', '.join(known)} (comma-separated, e.g. --format tflite,onnx)")
    return [f for f in known if f in names]


def parse_recipes(text: str | None) -> list[Recipe]:
    """'tflite:int8-static,onnx:fp32' -> recipes in :func:`recipes` order; unknown names are a ConverterInputError."""
    known = recipes()
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConverterInputError(f"unknown --recipe {', '.join(repr(n) for n in unknown)}",
                                  f"valid recipes: {', '.join(known)} (see pocketbert-convert list)")
    if text is not None and not names:  # `--recipe ,` would otherwise quietly build the defaults
        raise ConverterInputError(f"--recipe {text!r} names no recipe",
                                  f"name at least one of: {', '.join(known)}; or leave --recipe out for the defaults")
    return [r for name, r in known.items() if name in names]


def select(opts: list[str], int8: str, formats=("onnx",), named: list[Recipe] | None = None,
           max_bytes: int | None = None) -> list[Recipe | RecipeChoice]:
    """What to build, per format: always the float export (the quantisers' input and the reference
    artifact), then either the ``--recipe`` names or the int8 recipes ``--opt int8 --int8`` asks for;
    for a backend with a size ladder (TFLite) and ``max_bytes`` (``--max-size``), the most accurate recipe
    that fits instead."""
    known = recipes()
    if named:
        formats = [f for f in EXPORT_BACKENDS.names() if any(r.backend == f for r in named)]
    chosen: list[Recipe | RecipeChoice] = []
    for backend in formats:
        chosen.append(known[f"{backend}:fp32"])
        ladder = EXPORT_BACKENDS[backend].size_ladder
        if named:
            chosen += [r for r in named if r.backend == backend and r.precision != "fp32"]
        elif max_bytes and ladder:
            chosen.append(Fit(tuple(known[f"{backend}:{p}"] for p in ladder), max_bytes))
        elif Opts(opts).quantizes:
            candidates = tuple(known[f"{backend}:int8-{m}"] for m in INT8_METHODS if f"{backend}:int8-{m}" in known)
            if not candidates:
                raise ConverterInputError(f"--opt int8 was given but {backend} writes no int8 file",
                                          f"drop {backend} from --format, or int8 from --opt")
            if int8 == "auto":
                chosen.append(RecipeChoice(candidates))
            else:
                chosen += [r for r in candidates if int8 == "all" or r.precision == f"int8-{int8}"]
    return chosen
