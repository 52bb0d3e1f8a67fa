"""``pocketbert-bench``: the benchmark harness (latency, device, accuracy, report, bundles).

    pocketbert-bench bundles  [--models …] [--variants …] [--fast]      # convert the models measured
    pocketbert-bench latency  BUNDLE… [--backend onnx,tflite] [--threads 1,2] [--seq-len 32,64,128,256]
                                  [--batch 1,8] [--runs N] [--peers] [--fast]
    pocketbert-bench device   --serial S [--benchmark-binary PATH] [--taskset MASK] [--use-gpu]
                                  [--use-nnapi] BUNDLE…
    pocketbert-bench accuracy BUNDLE… [--tasks sst2,…] [--limit N] [--fast]
    pocketbert-bench size-frontier BUNDLE… [--threads 1] [--seq-len 128] [--rounds 20]  # phone-sized files
    pocketbert-bench arm64    BUNDLE… [--cpus cortex-a53,max-nosve,max] [--samples N]  # LiteRT aarch64 (QEMU)
    pocketbert-bench conversion-time CHECKPOINT [--opt …] [--recipe …] [--cprofile N]  # a conversion's stages
    pocketbert-bench web-peers BUNDLE… [--quick] [--texts 200] [--threads 1,2]  # in Chromium, beside transformers.js
    pocketbert-bench report   [--results DIR] [--out pocketbert/benchmarks/REPORT.md]

Results are JSON files in one schema (pocketbert/benchmarks/schema.py) under pocketbert/benchmarks/results/
unless --out says otherwise; ``report`` turns every results file there into REPORT.md and PNG plots.  That
is in a checkout of the repository; an installed package (pocketbert-bench) writes results and REPORT.md under
./pocketbert-benchmarks/ and its work files under $POCKETBERT_CACHE or ~/.cache/pocketbert/benchmarks.

group.py holds the command group, common.py what the commands share; one module per family of commands:
building.py ``bundles``, ``conversion-time``; speed.py ``latency``, ``throughput``, ``corpus``; phone.py
``device``; scores.py ``accuracy``, ``gates``, ``glue``; quantised.py ``size-frontier``, ``full-integer``,
``full-integer-levers``; emulation.py ``cpus``, ``arm64``; web.py ``web-peers``; reporting.py ``report``.
"""

from __future__ import annotations

from . import building, emulation, phone, quantised, reporting, scores, speed, web  # noqa: F401  (registers the commands)
from .group import cli

__all__ = ["cli"]
