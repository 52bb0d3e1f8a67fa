"""REPORT.md's "AVX2 without VNNI" section: a run on a CPU class this machine is not, kept as given (no results
file of it is here), with the reason read from the kernels' source.  docs/speed.md carries the same table."""

from __future__ import annotations

CPU = "AMD EPYC family 25 model 17 run as an AVX2-only CPU (no AVX-512, no VNNI), 2 cores, quiet"
DATE = "2026-11-28"
COMMAND = ("pocketbert-bench latency <plain minilm fp32 TFLite> bundles/* --threads 1,2 --seq-len 128 --batch 1 "
           "--runs 30 --warmup 5 --rounds 5 --no-floor")

#: (file, p50 ms at 1 thread, at 2 threads); speed-ups against the plain fp32 TFLite file in brackets
ROWS = [
    ("plain MiniLM fp32 TFLite (the teacher's shape, LayerNorm/GELU)", "44.36", "25.55"),
    ("sst2-phone tflite:int4-dynamic", "24.40 (1.82×)", "13.07 (1.95×)"),
    ("ner-phone tflite:int4-dynamic (its 6 × 768-unit form, before the 1,024-unit rebuild)", "19.37 (2.29×)",
     "12.02 (2.13×)"),
    ("sst2-demo tflite:fp32 / int8-dynamic", "41.96 / 37.56", "23.35 / 20.28"),
    ("sst2-demo onnx:fp32 / int8-dynamic / int8-static", "44.23 / 27.21 / 33.98", "25.71 / 14.66 / 22.55"),
    ("ner-demo onnx:int8-dynamic / tflite:int8-dynamic", "29.61 / 32.39", "20.16 / 18.62"),
]

WHY = [
    "Why, from the kernels' source (XNNPACK `src/configs/gemm-config.c`, `src/qs8-gemm/MRx8c8-avx2.c.in`, "
    "`src/qs8-gemm/MRx8c8-avxvnni.c.in`, `src/xnnpack/intrinsics-polyfill.h`; ONNX Runtime "
    "`onnxruntime/core/mlas/lib/x86_64/QgemmU8X8KernelAvx2.S`):",
    "",
    "* TFLite int8 weights (XNNPACK): the uint8-activation configuration (`qdu8_f32_qc8w`) has VNNI kernels only, so "
    "an AVX2 CPU gets `xnn_qd8_f32_qc8w_gemm_minmax_ukernel_4x8c8__avx2`: both operands sign-extended to 16 bits "
    "(`_mm256_cvtepi8_epi16`) and multiplied pairwise with `vpmaddwd` (`_mm256_madd_epi16`): 16 products per "
    "instruction plus the widening of both operands, against 8 multiply-adds per instruction in its fp32 kernel "
    "(`xnn_f32_gemm_minmax_ukernel_…fma3_broadcast`), and the activations are quantised at run time on top. "
    "Hence 1.1–1.15× over fp32.",
    "* TFLite int4 weights (per channel): `xnn_qd8_f32_qc4w_gemm_minmax_ukernel_4x8c8__avx2_madd_prfm` (template "
    "`MRx8c8-avxvnni.c.in`, variant MADD), whose `_mm256_dpbusd_epi32_madd` stands in for VNNI with `vpmaddubsw` "
    "(uint8 × int8, 32 products per instruction) then `vpmaddwd` by −1; a 4-bit weight times a uint8 activation "
    "(at most 255 × 8, two of them summed) cannot saturate its 16-bit sums. Hence 1.8–2.3×.",
    "* ONNX Runtime int8 (MLAS u8s8): `vpmaddubsw` then `vpmaddwd` by 1 (`MultiplyAccumulateRowU8S8Avx2`), the "
    "32-products path too; two full-range 8-bit products can overflow its 16-bit sum, which is why the converter's "
    "ONNX int8 files keep 7-bit weights. Hence 1.6–1.75× over fp32 (dynamic).",
    "* No interpreter option changes the choice: XNNPACK picks the kernel from the CPU's flags when it starts.",
    "",
    "The speed-ups in brackets are against the plain fp32 TFLite file of the teacher's shape; the phone files are "
    "also smaller models (NoNorm/ReLU, narrowed), so part of their gain is the model, not the kernel.",
    "",
    "So on an AVX2 CPU without VNNI, ship ONNX int8 (dynamic) or TFLite int4, not TFLite int8; with VNNI or AMX "
    "TFLite int8 is fast too. `runtime.load(..., measure=False)`'s fixed rule puts TFLite int4 before TFLite int8 on "
    "such a CPU; with measuring on (the default) the runtime times the files there and needs no rule.",
]


def section() -> list[str]:
    lines = ["## AVX2 without VNNI (a run given, not in the results files)", "",
             f"{CPU}, {DATE}, p50 ms, batch 1 × 128 tokens. Command: `{COMMAND}`.", "",
             "| file | 1 thread | 2 threads |", "|---|---:|---:|"]
    lines += [f"| {name} | {one} | {two} |" for name, one, two in ROWS]
    return lines + [""] + WHY + [""]
