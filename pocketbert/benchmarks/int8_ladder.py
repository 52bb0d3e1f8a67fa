"""The int8 accuracy ladder end to end on the real all-MiniLM-L6-v2: the README's main job, held to its bars.

    python -m pocketbert.benchmarks.int8_ladder [--format onnx,tflite] [--out DIR] [--verify-samples 1000]
                                                [--calibration-samples 256]

ONNX: converts the built-in ``minilm`` with ``--opt int8 --int8 all --format onnx`` (dynamic and static
int8), verified on the whole SST-2 dev set, and checks what must hold on every CPU: float within 1e-4 of
PyTorch; plain int8 misses the 99.5% target on MiniLM's outlier channels, so the ladder runs (SmoothQuant,
then the float-fallback search) and ships a file over the bar; static int8 agrees with float on at least
95% of the sentences.  TFLite: ``--opt int8 --format tflite --buckets 32,128``: float within 1e-4 of
PyTorch in both signatures, dynamic int8 over the bar (cosine ≥ 0.99).  Prints each ladder's path, the
figures and the stage times; exits 1 when a check fails.  (Which Linear roles the search keeps in float is
the ladder's path on this CPU, reported, not checked.)

This is a run of minutes on 2 cores, so the test suite keeps only the mechanics (tiny models) and this
command is where the real ladder is proven.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

from pocketbert.runtime import machine

#: SST-2 dev has 872 sentences: verification takes them all when asked for more
SST2_DEV = 872
#: all-MiniLM-L6-v2 with the converter's seeded 2-label head
PARAMETERS = (22_000_000, 23_500_000)


def check(manifest: dict) -> list[str]:
    """What the converted MiniLM must show; each failure as a sentence (empty: every bar holds)."""
    failures = []

    def need(ok: bool, what: str) -> None:
        if not ok:
            failures.append(what)

    fp32, dynamic, static = manifest["artifacts"]
    verification = manifest["verification"]
    need(verification["samples"] == SST2_DEV and verification["texts"].endswith("SST-2/dev.tsv"),
         f"verified on {verification['samples']} sentences of {verification['texts']}, not all of SST-2 dev")
    need(fp32["verification"]["fixed_inputs"]["max_abs"] <= 1e-4, "fp32 differs from PyTorch on fixed inputs")
    need(fp32["verification"]["real_sentences"]["max_abs"] <= 1e-4, "fp32 differs from PyTorch on real sentences")
    need(dynamic["verification"]["real_sentences"]["cosine"] >= 0.99, "int8-dynamic's cosine is below 0.99")
    unsmoothed = dynamic["details"]["unsmoothed_attempt"]
    need(unsmoothed["top1_agreement"] < 0.995 or unsmoothed["cosine"] < 0.99,
         "plain int8 met the 99.5% target: the ladder was not exercised")
    need(dynamic["details"]["smoothing"]["method"] == "smoothquant", "the ladder did not smooth")
    fallback = dynamic["details"]["float_fallback"]
    need(fallback["search"][0]["meets_bar"] and fallback["accepted"], "the float-fallback search shipped no file")
    real = static["verification"]["real_sentences"]
    need(static["verification"]["passed"] and real["cosine"] >= 0.99 and real["top1_agreement"] >= 0.95,
         f"int8-static misses its bar (cosine {real['cosine']}, top-1 {real['top1_agreement']})")
    source = manifest["source"]
    need(source["builtin"] == "minilm" and source["head_initialized"], "the source is not the built-in MiniLM")
    need(PARAMETERS[0] < source["parameters"] < PARAMETERS[1], f"{source['parameters']} parameters")
    return failures


def check_tflite(manifest: dict) -> list[str]:
    """What the TFLite conversion must show (fp32 in every signature, dynamic int8 over the bar)."""
    fp32, dynamic = manifest["artifacts"]
    failures = []
    if fp32["verification"]["fixed_inputs"]["max_abs"] > 1e-4:
        failures.append("tflite:fp32 differs from PyTorch on fixed inputs")
    if dynamic["verification"]["real_sentences"]["cosine"] < 0.99:
        failures.append("tflite:int8-dynamic's cosine is below 0.99")
    return failures


#: format -> (converter options, check)
CASES = {"onnx": (dict(int8="all", formats="onnx"), check),
         "tflite": (dict(int8="dynamic", formats="tflite", buckets=[32, 128]), check_tflite)}


def convert(fmt: str, out: Path, verify_samples: int, calibration_samples: int):
    from pocketbert.converter.pipeline import ConvertOptions
    from pocketbert.converter.pipeline import convert as run

    return run(ConvertOptions(checkpoint="minilm", out=out, opts="int8", verify_samples=verify_samples,
                              calibration_samples=calibration_samples, measure_latency=False, overwrite=True,
                              **CASES[fmt][0]))


def describe(result) -> str:
    lines = ["| artifact | cosine | top-1 agreement | unsmoothed attempt | smoothing | Linear roles kept in float |",
             "|---|---:|---:|---|---|---|"]
    for art in result.manifest["artifacts"]:
        real, details = art["verification"]["real_sentences"], art.get("details", {})
        plain = details.get("unsmoothed_attempt") or {}
        fallback = details.get("float_fallback") or {}
        lines.append(f"| {art['recipe']} | {real.get('cosine')} | {real.get('top1_agreement')} | "
                     f"{plain.get('cosine', '')} / {plain.get('top1_agreement', '')} | "
                     f"{(details.get('smoothing') or {}).get('method', '')} | "
                     f"{', '.join(fallback.get('roles') or []) or '-'} |")
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in result.stage_seconds.items())
    return "\n".join(lines) + f"\n\nstages: {stages}\nCPU: {machine.describe()['cpu']}"


def run_case(fmt: str, out: Path, args) -> list[str]:
    from pocketbert.converter import quiet

    with quiet.silenced(), warnings.catch_warnings():  # the exporters' and quantisers' chatter
        warnings.simplefilter("ignore")
        result = convert(fmt, out, args.verify_samples, args.calibration_samples)
    print(f"## {fmt}\n\n{describe(result)}\n")
    return [f"{fmt}: {failure}" for failure in CASES[fmt][1](result.manifest)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", default="onnx,tflite", help="onnx, tflite or both (default)")
    parser.add_argument("--out", type=Path, help="keep the bundles here, one folder per format "
                        "(default: a temporary directory)")
    parser.add_argument("--verify-samples", type=int, default=1000)
    parser.add_argument("--calibration-samples", type=int, default=256)
    args = parser.parse_args()
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if not formats or set(formats) - set(CASES):
        parser.error(f"--format: choose from {', '.join(CASES)}")
    with tempfile.TemporaryDirectory() as tmp:
        failures = [f for fmt in formats for f in run_case(fmt, (args.out or Path(tmp)) / f"minilm-{fmt}", args)]
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print("every bar holds" if not failures else f"{len(failures)} bar(s) missed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
