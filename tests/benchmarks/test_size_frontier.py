"""benchmarks size-frontier: its table, plot and REPORT.md section from a synthetic results record, and the bundles
it refuses before measuring anything (no conversion here: the command's real run is in the committed results)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import report, schema, size_frontier_report
from pocketbert.benchmarks.cli import cli


def _row(bundle, task, metric, recipe, mb, value, teacher, ms, fp32_ms):
    return {"bundle": f"/tmp/{bundle}", "bundle_name": bundle, "task": task, "metric": metric, "runner": recipe,
            "precision": recipe.split(":")[1], "buckets": [128], "size_bytes": int(mb * 1e6), "score": value,
            "teacher": teacher, "delta_vs_teacher": value - teacher, "gate": teacher - 1.0, "examples": 872,
            "truncated": 0, "threads": 1, "seq_len": 128, "batch": 1, "p50_ms": ms,
            "speedup_vs_fp32": fp32_ms / ms, "notes": []}


@pytest.fixture
def record() -> dict:
    data = schema.new_file("size-frontier", fast=False, machine={"cpu": "Test CPU", "matrix_flags": ["avx2"],
                                                                "load_average": [0.1], "load_average_end": [0.2]},
                           command_line="python -m benchmarks size-frontier a b",
                           settings={"threads": 1, "seq_len": 128, "batch": 1, "rounds": 20, "limit": None})
    data["results"] = [_row("sst2", "glue:sst2", "accuracy", "tflite:int4-dynamic", 13.1, 88.99, 89.34, 10.0, 30.0),
                       _row("sst2", "glue:sst2", "accuracy", "tflite:fp32", 92.0, 89.33, 89.34, 30.0, 30.0),
                       _row("ner", "conll2003", "f1", "tflite:fp32", 90.8, 89.9, 89.499, 29.0, 29.0),
                       _row("ner", "conll2003", "f1", "tflite:int8-dynamic", 37.1, 89.5, 89.499, 14.5, 29.0)]
    return data


def test_table_orders_fp32_first_and_gives_every_column(record):
    lines = size_frontier_report.table(record["results"])
    assert lines[0] == ("| bundle | task (metric) | recipe | MB | dev score | Δ vs teacher | p50 ms | speed-up vs fp32 |")
    assert lines[2] == "| ner | conll2003 (f1) | tflite:fp32 | 90.8 | 89.90 | +0.40 | 29.00 | 1.00× |"
    assert lines[3] == "| ner | conll2003 (f1) | tflite:int8-dynamic | 37.1 | 89.50 | +0.00 | 14.50 | 2.00× |"
    assert lines[5] == "| sst2 | glue:sst2 (accuracy) | tflite:int4-dynamic | 13.1 | 88.99 | -0.35 | 10.00 | 3.00× |"
    no_fp32 = dict(record["results"][0], speedup_vs_fp32=None)
    assert size_frontier_report.table([no_fp32])[2].endswith("| 10.00 | – |")


def test_plot_has_one_panel_per_task_with_teacher_and_gate_lines(record, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    seen = {}
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (seen.setdefault("fig", fig), close(fig)))
    path = size_frontier_report.plot(record["results"], tmp_path / "frontier.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = [ax for ax in seen["fig"].axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["conll2003", "glue:sst2"]
    sst2 = axes[1]
    assert sst2.get_xscale() == "log"
    lines = {tuple(line.get_ydata()): line.get_linestyle() for line in sst2.get_lines()}
    assert lines[(89.34, 89.34)] == "-" and lines[(88.34, 88.34)] == "--"
    # one bundle per task: labels are the recipe alone
    assert sorted(t.get_text() for t in sst2.texts) == ["fp32", "int4-dynamic"]


def test_report_section_shows_the_table_and_the_plot(record, tmp_path):
    (tmp_path / "results").mkdir()
    schema.write(record, tmp_path / "results" / "size-frontier.json")
    text = report.build(tmp_path / "results", tmp_path / "REPORT.md").read_text()
    assert "## Size frontier: the TFLite files phones run" in text
    assert "| sst2 | glue:sst2 (accuracy) | tflite:int4-dynamic | 13.1 | 88.99 | -0.35 | 10.00 | 3.00× |" in text
    assert "![size frontier](size_frontier.png)" in text and (tmp_path / "size_frontier.png").is_file()
    assert "Test CPU" in text and "`python -m benchmarks size-frontier a b`" in text


def test_report_prefers_a_full_run_to_a_newer_limited_one(record):
    limited = copy.deepcopy(record)
    limited["settings"]["limit"], limited["created"] = 16, "2999-01-01T00:00:00+00:00"
    assert size_frontier_report.latest([limited, record]) is record
    assert size_frontier_report.latest([limited]) is limited
    assert size_frontier_report.section([], Path(".")) == []


# --- refusals ------------------------------------------------------------------------------------------------

def _bundle(root: Path, recipes: list[str], teacher: bool) -> Path:
    """A hand-written bundle the runtime's loader accepts: dummy model files, listed with size and SHA-256.
    Refusals happen before any model is loaded, so the files need not be models."""
    root.mkdir()
    files = {"labels.txt": b"negative\npositive\n", "vocab.txt": b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n",
             "tokenizer.json": b"{}"}
    artifacts = []
    for recipe in recipes:
        backend, precision = recipe.split(":")
        name = f"model.{precision}.{'tflite' if backend == 'tflite' else 'onnx'}"
        files[name] = b"not a model"
        artifacts.append({"recipe": recipe, "backend": backend, "precision": precision, "file": name,
                          "details": {"buckets": [128]} if backend == "tflite" else {},
                          "verification": {"passed": True}})
    for name, data in files.items():
        (root / name).write_bytes(data)
    manifest = {"schema_version": 1, "task": "classification", "problem_type": "single_label_classification",
                "labels": ["negative", "positive"], "family": "bert", "model_type": "bert",
                "architecture": "BertForSequenceClassification", "max_sequence_length": 128, "model_vocab_size": 4,
                "inputs": [{"name": n, "dtype": "int64", "shape": ["batch", "sequence"]}
                           for n in ("input_ids", "attention_mask", "token_type_ids")],
                "outputs": [{"name": "logits", "dtype": "float32", "shape": ["batch", 2]}],
                "tokenizer": {"type": "wordpiece", "vocab_file": "vocab.txt", "tokenizer_file": "tokenizer.json",
                              "vocab_size": 4, "do_lower_case": True},
                "artifacts": artifacts,
                "files": {n: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in files.items()}}
    if teacher:
        manifest["recovery"] = {"task": "glue:sst2", "metric": "accuracy",
                                "dev_scores": {"teacher": {"accuracy": 89.3}}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


@pytest.mark.parametrize("case, problem, fix", [
    ("onnx-only", "has no verified TFLite artifact (it has: onnx:fp32)", "convert it with --format tflite"),
    ("no-teacher", "records no teacher score", "pocketbert-convert recover"),
    ("too-long", "--seq-len 256 is longer than", "pass --seq-len 128 or less"),
])
def test_refusals_name_the_problem_and_the_fix(tmp_path, case, problem, fix):
    bundle = _bundle(tmp_path / case, ["onnx:fp32"] if case == "onnx-only" else ["tflite:fp32"],
                     teacher=case != "no-teacher")
    args = ["size-frontier", str(bundle), "--out", str(tmp_path / "results")]
    result = CliRunner().invoke(cli, args + (["--seq-len", "256"] if case == "too-long" else []))
    assert result.exit_code == 3, result.output
    flat = " ".join(result.output.split())
    assert problem in flat and "fix: " in flat and fix in flat.split("fix: ", 1)[1]
    assert "Traceback" not in result.output and not (tmp_path / "results").exists()
