"""python -m benchmarks corpus --fast: the harness measures every engine, derives its figures from the
times it measured, and REPORT.md shows them (fast mode: 256 sentences, marked as not figures to quote)."""

from __future__ import annotations

import pytest

from pocketbert.benchmarks import corpus, report, schema

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[cluster]' (the test extra has it)")


def test_fast_corpus_benchmark_and_its_report_section(cls_bundle, tmp_path):
    data = corpus.run([cls_bundle], rows=None, workers=[1], data=None, fast=True, log=lambda message: None)
    records = data["results"]
    assert [(r["engine"], r["workers"]) for r in records] == [("pipeline", 1), ("stream", 1), ("ray", 1)]
    stream = records[1]
    for r in records:
        assert r["rows"] == corpus.FAST_ROWS and r["dataset"] == "SST-2 train" and r["seconds"] > 0
        assert r["rows_per_s"] == pytest.approx(r["rows"] / r["seconds"])
        assert r["speedup_vs_stream"] == pytest.approx(stream["seconds"] / r["seconds"])
        assert r["overhead_ms_per_row"] == pytest.approx((r["seconds"] - records[0]["seconds"]) * 1000 / r["rows"])
    assert records[2]["startup_s"] > 0 and records[0]["overhead_ms_per_row"] == 0
    assert data["fast"] and data["machine"]["cpu"]
    schema.write(data, tmp_path / "results" / "corpus-fast.json")
    text = report.build(tmp_path / "results", tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "## Corpus throughput" in text and "corpus-fast.json" in text and "FAST MODE" in text
    assert f"| {cls_bundle.name} | SST-2 train | {corpus.FAST_ROWS} | Ray Data, 1 actor |" in text
