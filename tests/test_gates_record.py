"""``pocketbert-bench gates`` shows "without recovery" only for a recovery's own record: a checkpoint that levers
changed after its recovery (the one command's int4-tune and pack steps) carries that recovery's figure in its
training.json, and it says nothing of the model the bundle ships."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import gates
from pocketbert.benchmarks.cli import cli
from pocketbert.converter.levers import int4_tune

from .shared import tiny_bench_bundle

SST2_DEV = "sentence\tlabel\na charming and often affecting journey .\t1\nunflinchingly bleak and desperate\t0\n" \
           "the acting is superb .\t1\na dull , lifeless film .\t0\n"
TEACHER, BEFORE, RECOVERED = {"accuracy": 89.33}, {"accuracy": 50.92}, {"accuracy": 88.99}


def _recovery_record() -> dict:
    """What ``pocketbert-convert recover`` writes (converter.training.recovery), in the parts gates reads."""
    return {"kind": "recover", "task": "glue:sst2", "metric": "accuracy", "teacher": "sst2-teacher",
            "transforms": ["nonorm", "relu"], "labels": ["negative", "positive"],
            "dev_scores": {"teacher": TEACHER, "without_recovery": BEFORE, "recovered": RECOVERED},
            "comparison": {"metrics": ["accuracy"], "rows": [
                {"name": "teacher (sst2-teacher)", "scores": TEACHER},
                {"name": "nonorm,relu without recovery", "scores": BEFORE},
                {"name": "nonorm,relu recovered (this model)", "scores": RECOVERED}]}}


def _lever_step(source: Path, out: Path, *, steps: int, packed: bool, after: float) -> dict:
    """The record an int4-tune step writes from ``source``'s training.json (the history carries on)."""
    report = {"teacher": "sst2-phone" if steps else None, "tensors_on_grid": 37, "packed": packed, "steps": steps,
              "seconds": 1.0, "dev_float": RECOVERED, "dev_int4_before": {"accuracy": 80.0},
              "dev_after": {"accuracy": after}}
    record = int4_tune._record(SimpleNamespace(checkpoint=source), None, None, report=report)
    out.mkdir()
    (out / "training.json").write_text(json.dumps(record), encoding="utf-8")
    return record


@pytest.fixture
def lever_chain_record(tmp_path) -> dict:
    """A recovered checkpoint, then int4-tune, then pack, as the one command runs them."""
    recovered = tmp_path / "recovered"
    recovered.mkdir()
    (recovered / "training.json").write_text(json.dumps(_recovery_record()), encoding="utf-8")
    _lever_step(recovered, tmp_path / "int4-tune", steps=40, packed=False, after=88.6)
    return _lever_step(tmp_path / "int4-tune", tmp_path / "pack", steps=0, packed=True, after=88.6)


def test_a_lever_chain_record_has_no_without_recovery(lever_chain_record):
    assert lever_chain_record["dev_scores"]["without_recovery"] == BEFORE  # carried on from the recovery
    manifest = {"source": {"training": lever_chain_record}}
    assert gates.recovery_record(manifest) is lever_chain_record  # its teacher still gates the bundle
    assert gates.without_recovery(manifest, lever_chain_record, "accuracy") is None


def test_a_recovery_record_has_it():
    record = _recovery_record()
    assert gates.without_recovery({"source": {"training": record}}, record, "accuracy") == 50.92
    converted = {"task": "glue:sst2", "metric": "accuracy",  # convert --recover's own record (no kind)
                 "dev_scores": {"teacher": TEACHER, "without_recovery": {"accuracy": 49.5}}}
    assert gates.without_recovery({"recovery": converted}, converted, "accuracy") == 49.5


def test_shrink_is_not_a_recovery_of_nonorm_relu():
    record = {**_recovery_record(), "kind": "shrink", "shrink": {"layers_before": 6, "layers_after": 4}}
    assert gates.without_recovery({"source": {"training": record}}, record, "accuracy") is None


@pytest.fixture(scope="module")
def tiny_bundle(tmp_path_factory):
    return tiny_bench_bundle(tmp_path_factory)


def _gates(tiny_bundle, tmp_path, record: dict) -> str:
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.pop("recovery", None)
    manifest.setdefault("source", {})["training"] = record
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "data" / "glue" / "SST-2").mkdir(parents=True)
    (tmp_path / "data" / "glue" / "SST-2" / "dev.tsv").write_text(SST2_DEV)
    result = CliRunner().invoke(cli, ["gates", str(bundle), "--data-dir", str(tmp_path / "data"), "--limit", "4"])
    assert "Traceback" not in result.output and "| bundle | glue:sst2" in result.output, result.output
    return result.output


def test_gates_table_of_a_lever_chain_bundle(tiny_bundle, tmp_path, lever_chain_record):
    output = _gates(tiny_bundle, tmp_path, lever_chain_record)
    assert "without recovery" not in output and "50.92" not in output
    assert "| 89.33 |" in output  # the teacher the bundle is gated against


def test_gates_table_of_a_recovered_bundle(tiny_bundle, tmp_path):
    output = _gates(tiny_bundle, tmp_path, _recovery_record())
    assert "| without recovery |" in output and "| 50.92 |" in output
