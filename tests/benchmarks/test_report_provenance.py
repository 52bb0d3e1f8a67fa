"""REPORT.md's "Where the figures come from": one line per results file naming what the file records of its
run, never a "None" for what it does not, and the results directory as found from the repository root."""

from __future__ import annotations

import json
from pathlib import Path

from pocketbert.benchmarks import provenance_report, report

from ..conftest import REPO

RESULTS = REPO / "pocketbert" / "benchmarks" / "results"
EPYC = {"cpu": "AMD EPYC", "usable_cpus": 2, "logical_cpus": 4, "matrix_flags": ["avx2", "avx512_vnni"],
        "load_average": [0.5, 0.7, 0.9], "load_average_end": [1.25, 0.8, 0.9]}


def _file(name: str, command: str, **fields) -> dict:
    return {"command": command, "created": "2026-11-23T12:52:02+00:00", "_path": f"/somewhere/{name}", **fields}


def test_each_line_names_what_its_file_records_and_leaves_out_the_rest():
    lines = [provenance_report.line(f) for f in (
        _file("accuracy.json", "accuracy", machine={}),  # an accuracy run records no machine
        _file("latency.json", "latency", machine=EPYC, fast=True),
        _file("glue.json", "glue", machine={"cpu": "AMD EPYC", "load_average": [3.0, 3.1, 3.2]}),
        _file("device-X1.json", "device", machine=None,
              device={"serial": "X1", "model": "Pixel 8", "soc": None, "android": "14", "abi": None}),
        _file("browser.json", "browser", device={"kind": "browser", "user_agent": "Chrome/131",
                                                 "hardware_concurrency": None, "runtime": "LiteRT.js"}),
    )]
    assert lines == [
        "- `accuracy.json`: accuracy; 2026-11-23 12:52 UTC",
        "- `latency.json`: latency; AMD EPYC (AVX-512 VNNI, 2 of 4 CPUs); 2026-11-23 12:52 UTC; load 0.50 → 1.25; "
        "FAST MODE",
        "- `glue.json`: glue; AMD EPYC; 2026-11-23 12:52 UTC; load 3.00 at start",
        "- `device-X1.json`: device; phone Pixel 8 (Android 14, serial X1); 2026-11-23 12:52 UTC",
        "- `browser.json`: browser; browser Chrome/131 (LiteRT.js); 2026-11-23 12:52 UTC",
    ]


def test_the_committed_results_render_one_line_each_without_none_under_their_real_path(tmp_path):
    names = sorted(p.name for p in RESULTS.glob("*.json"))
    text = report.build(RESULTS, tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "results file(s) in `pocketbert/benchmarks/results`." in text.splitlines()[2]
    section = text.split("## Where the figures come from\n", 1)[1].split("\n## ", 1)[0]
    entries = [line for line in section.splitlines() if line.startswith("- `")]
    assert [line.split("`")[1] for line in entries] == names
    for line, name in zip(entries, names):
        command = json.loads((RESULTS / name).read_text(encoding="utf-8"))["command"]
        assert line.startswith(f"- `{name}`: {command}; ") and " UTC" in line, line
    assert "None" not in section and "null" not in section


def test_the_results_directory_is_named_from_the_repository_root_or_the_current_directory(tmp_path, monkeypatch):
    assert provenance_report.location(RESULTS) == "pocketbert/benchmarks/results"
    monkeypatch.chdir(tmp_path)
    assert provenance_report.location(tmp_path / "pocketbert-benchmarks" / "results") == \
        str(Path("pocketbert-benchmarks") / "results")
