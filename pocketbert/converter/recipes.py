"""Named recipes, ``backend:precision``: the names the CLI, the manifest and the benchmarks share."""

from __future__ import annotations

from dataclasses import dataclass

from pocketbert.runtime.contract import TASKS  # noqa: F401  (the CLI's --task choices)

from .errors import ConverterInputError
from .opts import Opts

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


#: --max-size's TFLite candidates, most accurate first (each about half the one before)
FIT_PRECISIONS = ("fp16", "int8-dynamic", "int4-dynamic")
_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "k": 10**3, "mb": 10**6, "m": 10**6, "gb": 10**9, "g": 10**9}


def parse_size(text: str) -> int:
    """'8MB', '8.5 MB', '750kB' -> bytes (decimal units, as the converter prints sizes)."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match and _SIZE_UNITS.get(match.group(2).lower())
    if not match or unit is None or float(match.group(1)) * unit < 1:
        raise ConverterInputError(f"--max-size {text!r} is not a size",
                                  "write it as a number and a unit, e.g. --max-size 8MB")
    return int(float(match.group(1)) * unit)


FORMATS = ("onnx", "tflite")
RECIPES = {r.name: r for r in (
    Recipe("onnx", "fp32", "float32 ONNX, dynamic batch and sequence axes"),
    Recipe("onnx", "int8-dynamic", "int8 per-channel weights, activations quantised at run time"),
    Recipe("onnx", "int8-static", "int8 weights and calibrated int8 activations (QDQ)"),
    Recipe("tflite", "fp32", "float32 LiteRT, one signature per sequence-length bucket, batch 1"),
    Recipe("tflite", "fp16", "float16 weights (half the size), dequantised at load; float arithmetic"),
    Recipe("tflite", "int8-dynamic", "ai-edge-quantizer dynamic_wi8_afp32: int8 weights, float activations"),
    Recipe("tflite", "int8-static", "ai-edge-quantizer static_wi8_ai8: full integer, calibrated, int8 logits"),
    Recipe("tflite", "int4-dynamic", "ai-edge-quantizer dynamic_wi4_afp32 and int4 embedding rows: half int8's "
                                     "size, for phones"),
)}


DEFAULT_FORMATS = "tflite,onnx"


def parse_formats(text: str | None) -> list[str]:
    names = [n.strip().lower() for n in (text or DEFAULT_FORMATS).split(",") if n.strip()]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise ConverterInputError(f"unknown --format {', '.join(repr(n) for n in unknown) or repr(text)}",
                                  f"valid formats: {', '.join(FORMATS)} (comma-separated, e.g. --format tflite,onnx)")
    return [f for f in FORMATS if f in names]


def parse_recipes(text: str | None) -> list[Recipe]:
    """'tflite:int8-static,onnx:fp32' -> recipes in RECIPES order; unknown names are an ConverterInputError."""
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        raise ConverterInputError(f"unknown --recipe {', '.join(repr(n) for n in unknown)}",
                                  f"valid recipes: {', '.join(RECIPES)} (see python -m converter list)")
    if text is not None and not names:  # `--recipe ,` would otherwise quietly build the defaults
        raise ConverterInputError(f"--recipe {text!r} names no recipe",
                                  f"name at least one of: {', '.join(RECIPES)}; or leave --recipe out for the defaults")
    return [r for name, r in RECIPES.items() if name in names]


def select(opts: list[str], int8: str, formats=("onnx",), named: list[Recipe] | None = None,
           max_bytes: int | None = None) -> list[Recipe | RecipeChoice]:
    """What to build, per format: always the float export (the quantisers' input and the reference
    artifact), then either the ``--recipe`` names or the int8 recipes ``--opt int8 --int8`` asks for;
    for TFLite with ``max_bytes`` (``--max-size``), the most accurate recipe that fits instead."""
    if named:
        formats = [f for f in FORMATS if any(r.backend == f for r in named)]
    chosen: list[Recipe | RecipeChoice] = []
    for backend in formats:
        chosen.append(RECIPES[f"{backend}:fp32"])
        if named:
            chosen += [r for r in named if r.backend == backend and r.precision != "fp32"]
        elif max_bytes and backend == "tflite":
            chosen.append(Fit(tuple(RECIPES[f"tflite:{p}"] for p in FIT_PRECISIONS), max_bytes))
        elif Opts(opts).quantizes:
            candidates = tuple(RECIPES[f"{backend}:int8-{m}"] for m in INT8_METHODS)
            if int8 == "auto":
                chosen.append(RecipeChoice(candidates))
            else:
                chosen += [r for r in candidates if int8 == "all" or r.precision == f"int8-{int8}"]
    return chosen
