"""``pocketbert-bench web-peers --quick``: the three web runtimes run in one Chromium session on small bundles
and answer as the Python runtime does on the same files (agreement, not speed: nothing here is timed).

Needs node, npm and Debian's chromium (installed by web_demo/tools/ensure_chromium.py when missing, as the web
demo's test does); web/bench's packages are installed with ``npm ci`` when missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import report, schema, web_peers, web_peers_plan, web_peers_report, web_peers_site
from pocketbert.benchmarks.cli import cli

from ..runtime.conftest import convert_bundle, ner_bundle  # noqa: F401  (session fixture: a small NER bundle)
from ..shared import once

RUNTIMES = {"pocketbert", "transformers.js", "mediapipe"}


@pytest.fixture(scope="module")
def bench_packages():
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    assert not missing, f"{', '.join(missing)} not found: install Node.js 18+ with npm (apt-get install -y nodejs npm)"
    needed = ("@huggingface/transformers", "@mediapipe/tasks-text", "@litertjs/core", "esbuild", "playwright-core")
    if not all((web_peers_plan.BENCH / "node_modules" / name).is_dir() for name in needed):
        # --ignore-scripts: onnxruntime-node's install script downloads binaries; the pages use onnxruntime-web
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=web_peers_plan.BENCH,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"npm ci failed in web/bench/:\n{done.stderr[-3000:]}"


@pytest.fixture(scope="session")
def one_bucket_cls(checkpoints, tmp_path_factory) -> Path:
    """A classification bundle MediaPipe can run (one bucket, float logits) with the ONNX file transformers.js runs."""
    return once(tmp_path_factory, "web-peers-cls", lambda work: convert_bundle(
        checkpoints["bert"]["classification"], work / "cls", buckets=[32], recipes="onnx:fp32,tflite:fp32"))


@pytest.fixture(scope="module")
def quick_run(bench_packages, one_bucket_cls, ner_bundle, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("web-peers")
    result = CliRunner().invoke(cli, ["web-peers", str(one_bucket_cls), str(ner_bundle), "--quick", "--threads", "1",
                                      "--seq-len", "32", "--out", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out, result.output


def test_every_runtime_runs_and_agrees_with_the_python_runtime(quick_run):
    out, printed = quick_run
    data = schema.read(out / "web-peers-fast.json")
    assert data["command"] == "web-peers" and data["fast"] is True
    records = data["results"]
    assert [r["skipped"] for r in records if r["skipped"]] == []
    assert all(schema.check_record(r) == [] for r in records)
    by_task = {task: {r["web_runtime"] for r in records if r["task"] == task} for task in ("classification", "ner")}
    assert by_task == {"classification": RUNTIMES, "ner": {"pocketbert", "transformers.js"}}  # MediaPipe: no NER
    for r in records:
        a = r["agreement"]
        assert a["texts"] == web_peers.PeerSettings.quick().texts
        assert a["with_answers"] > 0, r["runner"]  # NER: the tiny model tags tokens, so there is something to compare
        assert a["agree"] == a["texts"], (r["model"], r["runner"], a)
        assert r["bytes_downloaded"]["model"] >= r["size_bytes"] > 0  # the page fetched the model file it ran
        assert r["bytes_downloaded"]["wasm"] > 0 and r["bytes_downloaded"]["js"] > 0
        assert r["init_ms"] > 0 and r["timed"]["runs"] == 3
    # transformers.js ran our ONNX file from the local folder; MediaPipe ran the single-bucket TFLite file
    runners = {(r["task"], r["runner"]) for r in records}
    assert {("classification", "transformers.js fp32"), ("classification", "mediapipe tflite:fp32")} <= runners
    assert sum("agrees with Python runtime" in line for line in printed.splitlines()) == 1


def test_report_has_the_browser_section(quick_run, tmp_path):
    out, _ = quick_run
    path = report.build(out, tmp_path / "REPORT.md")
    text = path.read_text(encoding="utf-8")
    assert "## In the browser: our pipeline, transformers.js and MediaPipe" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "100.0% of 8" in line]
    records = schema.read(out / "web-peers-fast.json")["results"]
    assert len(rows) == len(web_peers_report._pages(records))


def test_transformers_js_folder_names_the_labels():
    manifest = {"model_type": "bert", "architecture": "BertForTokenClassification", "labels": ["O", "B-PER"],
                "problem_type": None}
    config = web_peers_site.transformers_config(manifest)
    assert config["id2label"] == {"0": "O", "1": "B-PER"} and config["label2id"] == {"O": 0, "B-PER": 1}
    assert json.loads(json.dumps(config))["model_type"] == "bert"
