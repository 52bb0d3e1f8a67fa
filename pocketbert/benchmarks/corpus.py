"""``pocketbert-bench corpus BUNDLE…``: corpus throughput, one process against Ray Data.

For each bundle, its task's training set (classification: SST-2 train, 67,349 sentences; NER:
CoNLL-2003 train, 14,041 sentences) is written as JSON Lines and run through, one after another:

* ``pipeline``: the pipeline called on the whole list in memory (no file at all): the model's own speed;
* ``stream``: ``pocketbert-run … --input``'s streaming job (read, predict, write, commit per chunk);
* ``ray``: the same job on a local Ray instance with 1 and 2 actors (``--workers``), one thread each.

Every engine uses one intra-op thread per model instance, so ``ray`` with 2 actors uses two cores where the
others use one.  A record gives sentences/s, the Ray start-up (``ray.init``, not in the job time), the
speed-up against the streaming job and the per-row overhead of the engine: (engine s - pipeline s) / rows.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from pocketbert import runtime
from pocketbert.converter.inputs.texts import data_dir as find_data_dir
from pocketbert.converter.inputs.texts import read_texts
from pocketbert.runtime import machine
from pocketbert.runtime.corpus import job as streaming
from pocketbert.runtime.corpus.predict import Predictor, Settings

from . import schema

DATASETS = {"classification": ("SST-2 train", "glue/SST-2/train.tsv"), "ner": ("CoNLL-2003 train",
                                                                             "conll2003/train.txt")}
CHUNK_ROWS = 1024
FAST_ROWS = 256


class CorpusBenchError(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def corpus_file(task: str, data: Path, rows: int | None, work: Path) -> tuple[Path, list[str], str]:
    name, relative = DATASETS[task]
    path = data / relative
    if not path.is_file():
        raise CorpusBenchError(f"{path} is missing", "pass --data-dir with the directory holding glue/ and conll2003/")
    texts = read_texts(path, what="benchmark")[:rows]
    source = work / f"{task}.jsonl"
    with open(source, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
    return source, texts, name


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure_bundle(bundle: Path, data: Path, rows: int | None, workers: list[int], work: Path, log) -> list[dict]:
    settings = Settings(load={"threads": 1})
    predictor = Predictor.load(bundle, settings)
    task = predictor.pipeline.task
    source, texts, dataset = corpus_file(task, data, rows, work)
    base = {"model": Path(bundle).name, "bundle": str(bundle), "task": task, "dataset": dataset, "rows": len(texts),
            "artifact": predictor.pipeline.artifact.recipe, "threads_per_worker": 1, "chunk_rows": CHUNK_ROWS}
    log(f"{bundle}: {len(texts)} {dataset} sentences")
    pipe = runtime.load(bundle, threads=1)
    call = (lambda: pipe(texts, top_k=1)) if task == "classification" else (lambda: pipe(texts))
    records = [{**base, "engine": "pipeline", "workers": 1, "seconds": _timed(call), "startup_s": 0.0}]
    log(f"  pipeline: {records[-1]['seconds']:.1f} s")
    out = work / "out.jsonl"
    job = streaming.Job(bundle, source, out, settings, chunk_rows=CHUNK_ROWS, overwrite=True)
    records.append({**base, "engine": "stream", "workers": 1, "startup_s": 0.0,
                    "seconds": _timed(lambda: streaming.run(job, predictor=predictor))})
    log(f"  stream: {records[-1]['seconds']:.1f} s")
    for n in workers:
        startup, seconds = _ray(job, predictor, n)
        records.append({**base, "engine": "ray", "workers": n, "seconds": seconds, "startup_s": startup})
        log(f"  ray, {n} worker(s): {seconds:.1f} s (+ {startup:.1f} s start-up)")
    return _derived(records)


def _ray(job: streaming.Job, predictor: Predictor, workers: int) -> tuple[float, float]:
    """(ray.init seconds, job seconds) on a fresh local instance with ``workers`` CPUs."""
    import ray

    from pocketbert.runtime.corpus import ray_job

    startup = _timed(lambda: ray.init(address="local", num_cpus=workers, include_dashboard=False,
                                      log_to_driver=False, logging_level="ERROR"))
    try:
        return startup, _timed(lambda: ray_job.run(job, predictor, "local", workers))
    finally:
        ray.shutdown()


def _derived(records: list[dict]) -> list[dict]:
    pipeline = next(r for r in records if r["engine"] == "pipeline")
    stream = next(r for r in records if r["engine"] == "stream")
    for r in records:
        r["rows_per_s"] = r["rows"] / r["seconds"]
        r["speedup_vs_stream"] = stream["seconds"] / r["seconds"]
        r["overhead_ms_per_row"] = (r["seconds"] - pipeline["seconds"]) * 1000 / r["rows"]
    return records


def run(bundles: list[Path], *, rows: int | None, workers: list[int], data: str | None, fast: bool, log) -> dict:
    found = find_data_dir(data)
    if found is None:
        raise CorpusBenchError("no data directory", "pass --data-dir (the directory holding glue/ and conll2003/)")
    info = machine.describe()
    rows = FAST_ROWS if fast and rows is None else rows
    data_file = schema.new_file("corpus", fast=fast, machine=info,
                                settings={"rows": rows or "all", "workers": workers, "chunk_rows": CHUNK_ROWS,
                                          "threads_per_worker": 1})
    with tempfile.TemporaryDirectory(prefix="pocketbert-corpus-") as work:
        for bundle in bundles:
            data_file["results"] += measure_bundle(Path(bundle), found, rows, workers, work=Path(work), log=log)
    data_file["machine"]["load_average_end"] = machine.load_average()
    return data_file
