"""The corpus job on Ray Data (local instance, 2 actors): the same output, byte for byte, as the streaming
job and the pipeline in one process, in input order, ids kept; bad rows listed by row number.

One Ray instance serves every test of this module (starting Ray takes seconds)."""

from __future__ import annotations

import json

import pytest

from pocketbert.converter.inputs.texts import read_texts
from pocketbert.runtime.corpus import job as streaming
from pocketbert.runtime.corpus.predict import Predictor, Settings

from ..conftest import DATA

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[cluster]' (the test extra has it)")
ray_job = pytest.importorskip("pocketbert.runtime.corpus.ray_job")

ROWS = 2000


@pytest.fixture(scope="module")
def ray_session():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    texts = read_texts(DATA / "glue" / "SST-2" / "train.tsv")[-ROWS:]
    path = tmp_path_factory.mktemp("ray-corpus") / "in.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": f"{i:05d}", "text": text}) + "\n")
    return path, texts


def job(bundle, source, out, **kwargs) -> streaming.Job:
    return streaming.Job(bundle, source, out, Settings(load={"threads": 1}), chunk_rows=150, **kwargs)


def test_ray_two_workers_equal_streaming_and_one_process(ray_session, cls_bundle, corpus, tmp_path):
    from pocketbert import runtime

    source, texts = corpus
    settings = Settings(load={"threads": 1})
    predictor = Predictor.load(cls_bundle, settings)
    streaming.run(job(cls_bundle, source, tmp_path / "stream.jsonl"), predictor=predictor)
    summary = ray_job.run(job(cls_bundle, source, tmp_path / "ray.jsonl"), predictor, "local", 2)
    assert summary.rows_written == ROWS
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "stream.jsonl").read_bytes()
    rows = [json.loads(line) for line in open(tmp_path / "ray.jsonl", encoding="utf-8")]
    assert [r["id"] for r in rows] == [f"{i:05d}" for i in range(ROWS)] and [r["text"] for r in rows] == texts
    one_process = runtime.load(cls_bundle, threads=1)(texts, top_k=1)
    assert [(r["pred_label"], r["pred_score"]) for r in rows] == [(p[0]["label"], p[0]["score"]) for p in one_process]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ray.jsonl", "stream.jsonl"]


def test_ray_csv_keeps_ids_as_written_and_lists_bad_rows(ray_session, cls_bundle, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text('id,text\n007,a fine film\n008,""\n1e3,"dull, ""flat"""\n', encoding="utf-8")
    predictor = Predictor.load(cls_bundle, Settings(load={"threads": 1}))
    streaming.run(job(cls_bundle, source, tmp_path / "stream.csv"), predictor=predictor)
    ray_job.run(job(cls_bundle, source, tmp_path / "ray.csv"), predictor, "local", 2)
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "stream.csv").read_bytes()
    assert (tmp_path / "ray.csv").read_text().splitlines()[1].startswith("007,a fine film,")

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "good"}\n{"id": 2, "text": null}\n{"id": 3, "text": "fine"}\n')
    with pytest.raises(ray_job.CorpusError, match="row 2: field 'text' is null"):
        ray_job.run(job(cls_bundle, bad, tmp_path / "bad-out.jsonl"), predictor, "local", 2)
    assert not list(tmp_path.glob("bad-out*"))  # a failed Ray run leaves nothing
    listed = []
    ray_job.run(job(cls_bundle, bad, tmp_path / "bad-out.jsonl", skip_bad=True), predictor, "local", 2,
                on_bad=lambda where, why: listed.append((where, why)))
    assert listed == [("row 2", "field 'text' is null")]
    assert [json.loads(line)["id"] for line in open(tmp_path / "bad-out.jsonl")] == [1, 3]
