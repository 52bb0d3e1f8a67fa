"""Family x --opt (x recipe) matrix: bundle size, conversion time, parity and latency.

    python -m pocketbert.benchmarks.conversion_matrix [--families minilm,tinybert4,distilbert,mobilebert] [--opts 'A|B']
    python -m pocketbert.benchmarks.conversion_matrix --recipes 'tflite:fp16|tflite:int8-dynamic' --buckets 128 --opts ''

MiniLM is the real all-MiniLM-L6-v2 checkpoint; the other shapes are built from their published
configs with random weights (latency does not depend on weight values; the table says which are
random).  The conversion runs with its default int8 bar, so its quantiser takes the same steps as the
CLI (plain int8, smoothing, float fallback); a conversion that fails verification is a row saying
so.  Latency (ONNX Runtime CPU, or the LiteRT interpreter with XNNPACK): batch 1, sequence 128,
2 threads, median of 30 runs, relative to the fp32 export of the same model, same transforms and
backend, in the same run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pocketbert.converter.errors import VerificationError
from pocketbert.converter.opts import parse_opts
from pocketbert.converter.pipeline import ConvertOptions, convert

from .models import checkpoint as _checkpoint

OPTS = ["", "int8", "nonorm,relu,fold", "nonorm,relu,fold,int8"]


def checkpoint(name: str, root: Path) -> tuple[str, str]:
    """(converter checkpoint spec, label): the model shapes of benchmarks/models.py (one definition)."""
    spec, label, _random = _checkpoint(name, root)
    return spec, label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="minilm,tinybert4,distilbert,mobilebert")
    parser.add_argument("--opts", default="|".join(OPTS), help="'|'-separated --opt values ('' = none)")
    parser.add_argument("--verify-samples", type=int, default=300)
    parser.add_argument("--format", default="onnx", help="converter --format (onnx, tflite or tflite,onnx)")
    parser.add_argument("--int8", default="auto", help="converter --int8 for --opt values with int8")
    parser.add_argument("--recipes", default=None,
                        help="'|'-separated converter --recipe values, one conversion each (instead of --format; "
                             "--opts must then leave out int8), e.g. 'tflite:fp32|tflite:fp16|tflite:int8-dynamic'")
    parser.add_argument("--buckets", default=None, help="TFLite buckets, e.g. 128")
    args = parser.parse_args()
    recipes = args.recipes.split("|") if args.recipes else [None]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.families.split(","):
            ckpt, label = checkpoint(name, root)
            for opts, recipe in [(o, r) for o in args.opts.split("|") for r in recipes]:
                start = time.perf_counter()
                try:
                    result = convert(ConvertOptions(
                        checkpoint=ckpt, out=root / "out" / f"{name}-{opts or 'plain'}-{recipe}", opts=opts or None,
                        labels=["negative", "positive"] if name == "minilm" else None,
                        allow_accuracy_loss=True, verify_samples=args.verify_samples,
                        formats=None if recipe else args.format, recipes=recipe,
                        int8=args.int8 if parse_opts(opts).quantizes else "auto",
                        buckets=[int(b) for b in args.buckets.split(",")] if args.buckets else None))
                except VerificationError as exc:
                    rows.append([label, opts or "(none)", recipe or "-", "-", f"{time.perf_counter() - start:.0f}",
                                 f"verification failed: {exc.problem}", "-", "-", "-"])
                    print("| " + " | ".join(rows[-1]) + " |", flush=True)
                    continue
                seconds = time.perf_counter() - start
                damage = result.manifest["verification"]["transform_damage"]
                base = {a.recipe.split(":")[0]: a.latency_ms for a in result.artifacts if a.recipe.endswith("fp32")}
                for art in result.artifacts:
                    if art.recipe.endswith("fp32") and (parse_opts(opts).quantizes
                                                        or (recipe and recipe != art.recipe)):
                        continue  # reported in the row without int8 / of its own recipe
                    v = art.verification
                    real = v["real_sentences"]
                    parity = (f"max abs {v['fixed_inputs']['max_abs']:.1e}" if "fixed_inputs" in v else
                              f"cos {real['cosine']:.4f}, top-1 {real['top1_agreement']:.1%}")
                    rows.append([label, opts or "(none)", art.recipe, f"{art.bytes / 1e6:.1f} MB", f"{seconds:.0f}",
                                 parity, f"{damage['top1_agreement']:.1%}" if damage else "-",
                                 f"{art.latency_ms:.1f}", f"{base[art.recipe.split(':')[0]] / art.latency_ms:.2f}×"])
                print("| " + " | ".join(rows[-1]) + " |", flush=True)
    header = ["model", "--opt", "artifact", "size", "convert s", "parity vs PyTorch",
              "top-1 vs original (nonorm/relu)", "ms b1 s128", "speed-up vs own fp32"]
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
