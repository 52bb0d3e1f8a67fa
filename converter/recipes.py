"""Named recipes, ``backend:precision``: the names the CLI, the manifest and the benchmarks share."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InputError

TASKS = ("classification", "ner")
#: user-facing --opt names, in the order they are applied
OPTS = ("nonorm", "relu", "fold", "int8")
OPT_HELP = {
    "nonorm": "LayerNorm -> NoNorm (x*γ+β) in the encoder",
    "relu": "GELU -> ReLU in the feed-forward blocks",
    "fold": "fold NoNorm γ/β into the preceding Linear/embeddings where exact",
    "int8": "int8 quantisation (see --int8 for dynamic/static)",
}
INT8_METHODS = ("dynamic", "static")


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
        return self.precision != "fp32"


FORMATS = ("onnx", "tflite")
RECIPES = {r.name: r for r in (
    Recipe("onnx", "fp32", "float32 ONNX, dynamic batch and sequence axes"),
    Recipe("onnx", "int8-dynamic", "int8 per-channel weights, activations quantised at run time"),
    Recipe("onnx", "int8-static", "int8 weights and calibrated int8 activations (QDQ)"),
    Recipe("tflite", "fp32", "float32 LiteRT, one signature per sequence-length bucket, batch 1"),
    Recipe("tflite", "int8-dynamic", "ai-edge-quantizer dynamic_wi8_afp32: int8 weights, float activations"),
    Recipe("tflite", "int8-static", "ai-edge-quantizer static_wi8_ai8: full integer, calibrated, int8 logits"),
)}


def parse_opts(text: str | None) -> list[str]:
    """'relu,nonorm' -> ['nonorm', 'relu'] (canonical order); unknown names are an InputError."""
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in OPTS]
    if unknown:
        raise InputError(f"unknown --opt {', '.join(repr(n) for n in unknown)}",
                         f"valid optimisations: {', '.join(OPTS)} (comma-separated, e.g. --opt nonorm,relu,int8)")
    return [o for o in OPTS if o in names]


def parse_formats(text: str | None) -> list[str]:
    names = [n.strip().lower() for n in (text or "onnx").split(",") if n.strip()]
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise InputError(f"unknown --format {', '.join(repr(n) for n in unknown) or repr(text)}",
                         f"valid formats: {', '.join(FORMATS)} (comma-separated, e.g. --format tflite,onnx)")
    return [f for f in FORMATS if f in names]


def select(opts: list[str], int8: str, formats: list[str] = ("onnx",)) -> list[Recipe]:
    """Recipes to build, per format: always the float export (the reference), plus int8 when asked."""
    chosen = []
    for backend in formats:
        chosen.append(RECIPES[f"{backend}:fp32"])
        if "int8" in opts:
            methods = INT8_METHODS if int8 == "all" else (int8,)
            chosen += [RECIPES[f"{backend}:int8-{m}"] for m in methods]
    return chosen
