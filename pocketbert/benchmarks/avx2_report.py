"""REPORT.md's "AVX2 without VNNI" section: a run on a CPU class this machine is not, kept as given (no results
file of it is here), with the reason read from the kernels' source.  docs/speed.md carries the same table."""

from __future__ import annotations

CPU = ("AMD EPYC family 25 model 1 (`lscpu` flags avx2 fma f16c; no AVX-512, no VNNI, no AMX), 2 vCPUs under KVM, "
       "quiet")
DATE = "2026-12-02"
COMMAND = ("pocketbert-bench latency <plain minilm fp32 TFLite> bundles/* --threads 1,2 --seq-len 128 --batch 1 "
           "--runs 30 --warmup 5 --rounds 5 --no-floor")

#: (file, p50 ms at 1 thread, at 2 threads); speed-ups against the plain fp32 TFLite file in brackets, and for the
#: demos' int8 files against their bundle's fp32 file of the same format.  The bundles are set-up command 1's on that
#: machine; ner-demo was converted again with the int8 ladder's current stop rule and measured in its own run of the
#: command (its ONNX fp32 file: 44.05 ms there, 47.41 for sst2-demo's in the first; the same model shape).
ROWS = [
    ("plain MiniLM fp32 TFLite (the teacher's shape, LayerNorm/GELU)", "50.57", "23.55"),
    ("sst2-phone tflite:int4-dynamic", "23.69 (2.13×)", "12.00 (1.96×)"),
    ("ner-phone tflite:int4-dynamic", "29.68 (1.70×)", "13.89 (1.70×)"),
    ("sst2-demo tflite:fp32 / int8-dynamic", "47.46 / 44.23 (1.07×)", "25.49 / 21.11 (1.21×)"),
    ("sst2-demo onnx:fp32 / int8-dynamic (int8-static not shipped: not faster than fp32 when converted)",
     "47.41 / 29.01 (1.63×)", "26.37 / 17.00 (1.55×)"),
    ("ner-demo onnx:fp32 / int8-dynamic / int8-static (every Linear in int8)", "44.05 / 31.35 (1.41×) / 39.87 (1.10×)",
     "25.43 / 19.18 (1.33×) / 24.57 (1.03×)"),
    ("ner-demo tflite:fp32 / int8-dynamic", "43.78 / 42.42 (1.03×)", "25.54 / 23.13 (1.10×)"),
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
    "Hence 1.03–1.2× over fp32.",
    "* TFLite int4 weights (per channel): `xnn_qd8_f32_qc4w_gemm_minmax_ukernel_4x8c8__avx2_madd_prfm` (template "
    "`MRx8c8-avxvnni.c.in`, variant MADD), whose `_mm256_dpbusd_epi32_madd` stands in for VNNI with `vpmaddubsw` "
    "(uint8 × int8, 32 products per instruction) then `vpmaddwd` by −1; a 4-bit weight times a uint8 activation "
    "(at most 255 × 8, two of them summed) cannot saturate its 16-bit sums. Hence 1.8–2.3×.",
    "* ONNX Runtime int8 (MLAS u8s8): `vpmaddubsw` then `vpmaddwd` by 1 (`MultiplyAccumulateRowU8S8Avx2`), the "
    "32-products path too; two full-range 8-bit products can overflow its 16-bit sum, which is why the converter's "
    "ONNX int8 files keep 7-bit weights. Hence 1.3–1.65× over fp32 (dynamic). Static int8 was then QDQ on the "
    "un-fused export, whose attention runs as separate Reshape/Transpose/MatMul/Softmax/Where nodes (about a fifth "
    "of its time in ONNX Runtime's profile, 1 thread) where fp32 and dynamic int8 run one fused Attention per "
    "layer: 1.03–1.1×. Keeping its MatMul outputs in float (MatMulIntegerToFloat instead of QLinearMatMul) did "
    "not change that (36.3 against 37.6 ms, 24.5 against 26.3). Static int8 now quantises the fused graph with "
    "the dynamic file's kernels and calibrated ranges (docs/speed.md).",
    "* No interpreter option changes the choice: XNNPACK picks the kernel from the CPU's flags when it starts.",
    "",
    "The phone files' speed-ups are against the plain fp32 TFLite file of the teacher's shape; they are also smaller "
    "models (NoNorm/ReLU, narrowed), so part of their gain is the model, not the kernel. They are 1.7-2.1× where an "
    "AVX-512 VNNI EPYC gives 3.8-4.1×: on AVX2 the rest must come from fewer multiply-adds. The one command's "
    "latency fit there (`--max-latency 14.4 --threads 1`, 3.5× the plain file; the plan printed, no step run): "
    "0.20 ms + 2.03 ms a block + 1.70 ms per 1,000 feed-forward units of a block, noise ±26%; the plan for `sst2-demo` "
    "at 8 MB narrows to 768 units and keeps 4 blocks (654 M multiply-adds at sequence 128 against 1,435 M, 13.5 ms "
    "predicted). Whether a 4-block student stays within the gate was not measured.",
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
