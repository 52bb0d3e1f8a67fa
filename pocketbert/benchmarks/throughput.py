"""``pocketbert-bench throughput BUNDLE...``: real sentences through the runtime, end to end, sentences/s.

A classification bundle runs SST-2 dev, an NER bundle CoNLL-2003 dev (real lengths: SST-2 dev's
median sentence is about 25 tokens).  Every artifact of each bundle runs the whole dev set through
``pipeline(texts)`` (tokenization, length-sorted batching, the model, post-processing) twice:

* ``natural``: as the runtime runs it.  TFLite: each row in the smallest bucket signature that holds
  it (a bundle converted with ``--buckets 32,64,128,256``); ONNX: dynamic shapes, each batch padded
  only to its longest row.
* ``padded``: every row padded to 128 tokens (or the largest bucket, if smaller) before the model,
  which is what a bundle with one TFLite bucket of 128 runs, and an ONNX model fed fixed-length
  input.  Rows longer than 128 tokens keep their own length in both modes (the record counts them).
  ONNX dynamic int8 runs each row alone without its padding (so that no row depends on its batch
  neighbours): it has no padded mode.

Configurations alternate within each of ``--rounds`` rounds (the best round is kept), so background
load hits all alike.  Per configuration the record holds the wall time, the time spent inside the
model (``Backend.run``) and the rest's share of it: the runtime's overhead (tokenization, batching,
post-processing), whose target is under 5% of model time.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from pocketbert.runtime import machine

from . import schema

PAD_TO = 128
DATASETS = {"classification": ("SST-2 dev", ("glue", "SST-2", "dev.tsv")),
            "ner": ("CoNLL-2003 dev", ("conll2003", "dev.txt"))}
MODES = ("natural", "padded")


class _Timed:
    """The pipeline's backend, timed, and optionally fed rows padded to ``pad_to`` tokens."""

    def __init__(self, backend, pad_to: int | None):
        self.inner, self.pad_to, self.seconds = backend, pad_to, 0.0
        self.name, self.max_length, self.max_batch = backend.name, backend.max_length, backend.max_batch
        # padded mode feeds every row at pad_to, i.e. one bucket: the pipeline need not split by bucket
        self.buckets = None if pad_to else backend.buckets

    def run(self, feeds: dict[str, np.ndarray], quiet: bool = False) -> np.ndarray:
        length = feeds["input_ids"].shape[1]
        if self.pad_to and length < self.pad_to:  # pad id, mask and token type 0, as every bundle pads
            feeds = {k: np.pad(v, ((0, 0), (0, self.pad_to - length))) for k, v in feeds.items()}
        start = time.perf_counter()
        out = self.inner.run(feeds, quiet)
        self.seconds += time.perf_counter() - start
        return out[:, :length] if out.ndim == 3 else out

    def describe(self) -> str:
        return self.inner.describe()


def texts_for(task: str, data: Path) -> tuple[str, list[str]]:
    from pocketbert.converter.inputs.texts import read_texts

    name, parts = DATASETS[task]
    texts = read_texts(data.joinpath(*parts), what=name)
    return name, [t if isinstance(t, str) else " ".join(t) for t in texts]


def _configurations(bundle_dirs: list[Path], threads: int, data: Path, limit: int | None) -> list[dict]:
    from pocketbert import runtime

    out = []
    for directory in bundle_dirs:
        bundle = runtime.Bundle.open(directory)
        dataset, texts = texts_for(bundle.task, data)
        texts = texts[:limit] if limit else texts
        for artifact in (a for a in bundle.artifacts if a.passed and a.precision in ("fp32", "int8-dynamic")):
            for mode in MODES:
                if mode == "padded" and artifact.recipe == "onnx:int8-dynamic":
                    continue  # the runtime runs it row by row without padding: padding would be cut off again
                pipe = runtime.load(directory, recipe=artifact.recipe, threads=threads)
                pad_to = min(PAD_TO, pipe.max_length) if mode == "padded" else None  # a bundle's largest bucket
                pipe.backend = _Timed(pipe.backend, pad_to)
                pipe(texts[:32])  # warm-up: first-call allocations, every bucket signature touched
                out.append({"pipe": pipe, "texts": texts, "record": {
                    "model": Path(directory).name, "task": bundle.task, "dataset": dataset, "runner": artifact.recipe,
                    "backend": artifact.backend, "precision": artifact.precision, "mode": mode, "pad_to": pad_to,
                    "threads": threads,
                    "batch_size": pipe.batch_size, "sentences": len(texts)}})
    return out


def run(bundle_dirs: list[Path], data: Path, threads: int = 2, rounds: int = 2, limit: int | None = None,
        progress=print) -> dict:
    """Measure every configuration; returns a results dict (:mod:`benchmarks.schema`, command ``throughput``)."""
    result = schema.new_file("throughput", fast=False, machine=machine.describe(),
                             settings={"threads": threads, "rounds": rounds, "pad_to": PAD_TO, "limit": limit})
    configurations = _configurations(bundle_dirs, threads, data, limit)
    for config in configurations:
        pipe, texts = config["pipe"], config["texts"]
        lengths = [pipe.encoder.length(t) for t in texts]
        config["record"].update(tokens_median=statistics.median(lengths),
                                rows_over_128=sum(n > PAD_TO for n in lengths), rounds=[])
    for _ in range(rounds):
        for config in configurations:
            pipe = config["pipe"]
            pipe.backend.seconds = 0.0
            start = time.perf_counter()
            pipe(config["texts"])
            wall = time.perf_counter() - start
            config["record"]["rounds"].append({"wall_s": wall, "model_s": pipe.backend.seconds})
    for config in configurations:
        record = config["record"]
        best = min(record["rounds"], key=lambda r: r["wall_s"])
        record.update(wall_s=best["wall_s"], model_s=best["model_s"],
                      sentences_per_s=record["sentences"] / best["wall_s"],
                      overhead_share=(best["wall_s"] - best["model_s"]) / best["model_s"])
        progress(f"  {record['model']} {record['runner']} {record['mode']}: {record['sentences_per_s']:.1f} "
                 f"sentences/s, overhead {record['overhead_share']:.1%} of model time")
        result["results"].append(record)
    result["machine"]["load_average_end"] = machine.load_average()
    add_speedups(result["results"])
    return result


def add_speedups(records: list[dict]) -> None:
    """``vs_padded``: sentences/s of a configuration over the same artifact padded (same run)."""
    padded = {(r["model"], r["runner"]): r for r in records if r["mode"] == "padded"}
    for r in records:
        other = padded.get((r["model"], r["runner"]))
        r["vs_padded"] = r["sentences_per_s"] / other["sentences_per_s"] if other else None
