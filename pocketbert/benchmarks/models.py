"""The models the report measures, and the bundles made from them (``pocketbert-bench bundles``).

Shapes: the real all-MiniLM-L6-v2 (``minilm``, the converter's built-in), and MobileBERT (default
config: 24 layers, 25M parameters), TinyBERT4 (4 layers, 312 wide, FFN 1200) and DistilBERT built from
their configs with random weights: latency does not depend on weight values, and every table says
which models are random.  Fast mode uses ``tiny-bert`` (the converter's 2-layer test config).

Variants (one conversion each):

* ``plain-int8``: no ``--opt``; recipes onnx:fp32, onnx:int8-dynamic, tflite:fp32, tflite:int8-dynamic.
  Its fp32 files double as the "plain export" peers, so they are not converted twice.
* ``nonorm-relu-fold-int8``: ``--opt nonorm,relu,fold,int8 --int8 dynamic``, both formats.
* ``plain-int8-static``, ``nonorm-relu-fold-int8-static``: the same with full-integer int8 (asked for
  by name: slow to calibrate, and a conversion the converter refuses is reported and skipped).
* ``plain-int8-onnx``, ``nonorm-relu-fold-int8-onnx``: the first two, ONNX files only.

``NAME=DIR`` adds a checkpoint of your own (real weights), ``NAME@TAG=DIR`` another checkpoint of the same
model, e.g. ``minilm-sst2@recovered=DIR``: its variants are named ``recovered/plain-int8`` and its rows
sit beside the original's, compared with the original's peers and accuracy.

``bundles`` writes ``models.json`` beside the bundles: bundle directory name → model name, label,
random weights, variant.  ``latency`` reads it to label its rows.
"""

from __future__ import annotations

import json
from pathlib import Path

REGISTRY = "models.json"

SHAPES = {
    "minilm": ("all-MiniLM-L6-v2 (real weights)", None),
    "mobilebert": ("MobileBERT (24 layers, random weights)", lambda: _cfg("MobileBertConfig")),
    "tinybert4": ("TinyBERT4 (4x312, random weights)", lambda: _cfg(
        "BertConfig", hidden_size=312, num_hidden_layers=4, num_attention_heads=12, intermediate_size=1200)),
    "distilbert": ("DistilBERT (6x768, random weights)", lambda: _cfg("DistilBertConfig")),
    # the paper's MobileBERT "without OPT": LayerNorm and GELU, for the transforms to act on
    "mobilebert-lngelu": ("MobileBERT with LayerNorm/GELU (24 layers, random weights)", lambda: _cfg(
        "MobileBertConfig", normalization_type="layer_norm", hidden_act="gelu")),
    "tiny-bert": ("tiny BERT (2x32, random weights; fast mode)", lambda: _tiny("bert")),
}
VARIANTS = {
    "plain-int8": dict(recipes="onnx:fp32,onnx:int8-dynamic,tflite:fp32,tflite:int8-dynamic"),
    "nonorm-relu-fold-int8": dict(opts="nonorm,relu,fold,int8", formats="onnx,tflite", int8="dynamic"),
    # full-integer (for NPUs/DSPs): minutes of calibration per file, and the converter may refuse them
    "plain-int8-static": dict(recipes="onnx:fp32,onnx:int8-static,tflite:fp32,tflite:int8-static"),
    "nonorm-relu-fold-int8-static": dict(opts="nonorm,relu,fold,int8", formats="onnx,tflite", int8="static"),
    # ONNX only (the ONNX-vs-ONNX Runtime optimizer tables; minutes faster to convert than both formats)
    "plain-int8-onnx": dict(recipes="onnx:fp32,onnx:int8-dynamic"),
    "nonorm-relu-fold-int8-onnx": dict(opts="nonorm,relu,fold,int8", formats="onnx", int8="dynamic"),
}
DEFAULT_VARIANTS = ("plain-int8", "nonorm-relu-fold-int8")
DEFAULT_MODELS = ("minilm", "mobilebert", "tinybert4", "distilbert")
FAST_MODELS = ("tiny-bert",)
FAST_VARIANTS = ("plain-int8",)


def _has_tflite(variant: dict) -> bool:
    return "tflite" in variant.get("recipes", "") or "tflite" in variant.get("formats", "")


def _cfg(name: str, **kwargs):
    import transformers

    return getattr(transformers, name)(**kwargs)


def _tiny(family: str):
    from pocketbert.converter.families import families

    return next(f for f in families() if f.name == family).tiny_config(vocab_size=30522)


def checkpoint(name: str, root: Path) -> tuple[str, str, bool]:
    """(checkpoint spec for the converter, label, random weights) of a model name, or of ``NAME=DIR``
    (a checkpoint of your own, e.g. a fine-tuned demo model: real weights)."""
    if "=" in name:
        label, directory = name.split("=", 1)
        label = label.split("@", 1)[0]
        if not (Path(directory) / "config.json").is_file():
            raise KeyError(f"{directory!r} is not a Hugging Face checkpoint directory (no config.json)")
        return directory, label, False
    if name not in SHAPES:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(SHAPES)}")
    label, make = SHAPES[name]
    if make is None:
        return name, label, False  # a built-in real checkpoint
    directory = root / "checkpoints" / name
    if not (directory / "config.json").is_file():
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from pocketbert.converter.builtin import BUILTIN

        torch.manual_seed(0)
        config = make()
        config.num_labels = 2
        AutoModelForSequenceClassification.from_config(config).eval().save_pretrained(directory)
        AutoTokenizer.from_pretrained(BUILTIN["minilm"].path()).save_pretrained(directory)
    return str(directory), label, True


def build_bundles(models: list[str], variants: list[str], root: Path, buckets: list[int], log=print,
                  verify_samples: int = 300, threads: int = 2) -> list[Path]:
    """Convert every model × variant into ``root/bundles``; existing bundles are reused."""
    from pocketbert.converter.errors import VerificationError
    from pocketbert.converter.pipeline import ConvertOptions, convert
    from pocketbert.converter.quiet import silenced

    out_dir = root / "bundles"
    registry_path = out_dir / REGISTRY
    registry = json.loads(registry_path.read_text()) if registry_path.is_file() else {}
    made = []
    for name in models:
        spec, label, random_weights = checkpoint(name, root)
        # The shapes' classification heads are untrained: their logits sit at the decision boundary, so
        # the int8 ladder's 99.5% agreement target would chase noise (keeping Linears in float that a
        # trained model quantises fine).  For the same reason their top-1 agreement measures the head's
        # near-ties, not the int8 error (MobileBERT's shape: cosine 0.9958, top-1 92%): shapes are held to
        # the cosine bar alone.  NAME=DIR checkpoints of your own get the converter's defaults.
        untrained_head = "=" not in name
        name, _, tag = name.split("=", 1)[0].partition("@")  # NAME@TAG=DIR: another checkpoint of model NAME
        for variant in variants:
            variant_name = f"{tag}/{variant}" if tag else variant
            dest = out_dir / f"{name}--{variant_name.replace('/', '-')}"
            if not (dest / "manifest.json").is_file():
                log(f"converting {name} ({variant})…")
                options = ConvertOptions(checkpoint=spec, out=dest, overwrite=True, allow_accuracy_loss=True,
                                         labels=["negative", "positive"] if name == "minilm" else None,
                                         buckets=sorted(buckets) if _has_tflite(VARIANTS[variant]) else None,
                                         verify_samples=verify_samples,
                                         calibration_samples=64 if name.startswith("tiny") else 256,
                                         measure_latency=False, threads=threads, **VARIANTS[variant],
                                         **({"int8_target_agreement": 0.0, "int8_min_agreement": 0.0} if untrained_head else {}))
                try:
                    with silenced():  # the exporters' C++ logs; our own messages still show
                        convert(options)
                except VerificationError as exc:  # e.g. full-integer int8 missing the bar: no bundle, said so
                    log(f"  {name} ({variant}) refused by the converter: {exc.problem}")
                    continue
            registry[dest.name] = {"model": name, "label": label, "random_weights": random_weights,
                                   "variant": variant_name}
            made.append(dest)
    out_dir.mkdir(parents=True, exist_ok=True)
    registry_path.write_text(json.dumps(registry, indent=1) + "\n")
    return made


def describe_bundle(bundle: Path, manifest: dict) -> dict:
    """Model name, label and random-weights flag of a bundle: from models.json if ``bundles`` made it."""
    registry_path = bundle.parent / REGISTRY
    entry = {}
    if registry_path.is_file():
        entry = json.loads(registry_path.read_text()).get(bundle.name, {})
    source = manifest.get("source") or {}
    name = entry.get("model") or source.get("builtin") or Path(source.get("checkpoint") or bundle.name).name
    return {"model": name, "model_label": entry.get("label") or name,
            "random_weights": entry.get("random_weights"), "variant_name": entry.get("variant")}
