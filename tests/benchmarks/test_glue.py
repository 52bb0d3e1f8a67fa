"""``python -m benchmarks glue --fast`` end to end on a tiny model and tiny task files: fine-tune, recover,
convert, score every artifact through the runtime; the re-run resumes from the cache; the report renders."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from pocketbert.benchmarks import glue, glue_report, schema
from pocketbert.benchmarks.glue_options import parse_options

from ..conftest import REPO

RECIPES = "onnx:fp32,onnx:int8-dynamic,onnx:int8-static,tflite:fp32"


def tiny_data(root):
    """A data directory in the shared layout with a tiny SST-2 and CoNLL-2003 (generated, not copied)."""
    rnd = random.Random(0)
    good, bad, filler = ["good", "great", "lovely"], ["bad", "awful", "dull"], ["the", "film", "was", "and", "plot"]
    (root / "glue" / "SST-2").mkdir(parents=True)
    for split, n in (("train", 64), ("dev", 24)):
        rows = [f"{' '.join(rnd.sample(filler, 3))} {rnd.choice(good if i % 2 else bad)}\t{i % 2}" for i in range(n)]
        (root / "glue" / "SST-2" / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    (root / "conll2003").mkdir()
    for split, n in (("train", 48), ("dev", 16), ("test", 16)):
        lines = []
        for _ in range(n):
            lines += [f"{w} O" for w in rnd.sample(filler, 2)] + [f"{rnd.choice(['john', 'mary'])} B-PER", "in O",
                                                                   f"{rnd.choice(['paris', 'rome'])} B-LOC", ""]
        (root / "conll2003" / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("glue")
    data = tiny_data(root / "data")
    options = parse_options(True, tasks="glue:sst2,conll2003", recipes=RECIPES, cache=root / "cache",
                                 data_dir=data)
    log = []
    results = glue.run(options, root / "glue-fast.json", log=log.append)
    return root, options, results


def test_every_artifact_of_every_task_is_scored_against_its_teacher(run):
    root, options, results = run
    assert schema.read(root / "glue-fast.json")["command"] == "glue" and results["fast"]
    rows = results["results"]
    for task, split in (("glue:sst2", "dev"), ("conll2003", "dev"), ("conll2003", "test")):
        mine = [r for r in rows if r["task"] == task and r["split"] == split]
        torch_rows = {r["stage"]: r for r in mine if r["runner"] == "pytorch:fp32"}
        assert set(torch_rows) == {"teacher", "without_recovery", "recovered"}
        teacher, recovered = torch_rows["teacher"]["score"], torch_rows["recovered"]["score"]
        artifacts = {r["runner"]: r for r in mine if r["stage"] == "artifact"}
        assert set(artifacts) == set(RECIPES.split(","))
        # an int8 file that does not pay against its fp32 file, or fails the dev gate, is not shipped (a tiny model's
        # may be, on some CPUs): a row saying so
        for r in [r for r in artifacts.values() if r.get("refused")]:
            assert ":int8" in r["runner"] and r["refused"].startswith(("not 1.1x as fast as ", "dev ")), r
            del artifacts[r["runner"]]
        exports = {r["runner"]: r for r in mine if r["stage"] == "teacher-artifact"}
        assert set(exports) == {"onnx:fp32", "tflite:fp32"}
        # the runtime's fp32 exports score what PyTorch scored: the teacher's and the recovered model's
        assert exports["onnx:fp32"]["score"] == pytest.approx(teacher, abs=0.01)
        assert artifacts["onnx:fp32"]["score"] == pytest.approx(recovered, abs=0.01)
        for r in artifacts.values():
            assert r["delta_vs_teacher"] == pytest.approx(r["score"] - teacher)
            assert r["examples"] == (24 if task == "glue:sst2" else 16)
            backend, precision = r["runner"].split(":")
            if precision.startswith("int8"):
                float_score = artifacts[f"{backend}:fp32"]["score"]
                assert r["gate"]["passed"] == (r["score"] >= float_score - 0.5 - 1e-9)
            else:
                assert r["gate"]["passed"] == (r["score"] >= teacher - 1.0 - 1e-9)
            assert r["size_bytes"] > 0 and r["latency_ms"] > 0
        if "onnx:int8-dynamic" in artifacts:
            assert artifacts["onnx:int8-dynamic"]["size_bytes"] < artifacts["onnx:fp32"]["size_bytes"]


def test_a_rerun_resumes_from_the_cache_through_the_command_line(run):
    root, options, results = run
    teacher = options.cache / "tiny-bert" / "glue-sst2" / "teacher" / "training.json"
    before = teacher.stat().st_mtime_ns
    done = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "glue", "--fast", "--tasks",
                           "glue:sst2,conll2003", "--recipes", RECIPES, "--cache", str(options.cache), "--data-dir",
                           str(options.data_dir), "--out", str(root / "again.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "teacher cached" in done.stderr and "scores cached" in done.stderr
    assert teacher.stat().st_mtime_ns == before  # nothing retrained
    again = json.loads((root / "again.json").read_text())["results"]
    key = lambda r: (r["task"], r["split"], r["stage"], r["runner"], r["score"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, results["results"]))
    assert "glue:sst2 dev (accuracy)" in done.stdout


def test_the_report_section_and_plot_points(run):
    root, options, results = run
    files = [dict(schema.read(root / "glue-fast.json"), _path=str(root / "glue-fast.json"))]
    text = "\n".join(glue_report.section(files, {}))
    assert "| SST-2 acc | GLUE average (Δ) |" in text and "| dev | test |" in text
    assert "onnx:int8-static +nonorm,relu,fold" in text and "Fast mode rows present" in text
    assert "77.7 vs 78.5 (**-0.8**)" in text
    points = glue_report.plot_points(files)  # GLUE needs all four tasks for an average: CoNLL points only
    assert points and all(label.startswith("CoNLL-2003") for label, _, _ in points)
    assert all(speed > 0 for _, speed, _ in points)


def test_bad_task_or_recipe_names_are_refused(tmp_path):
    from pocketbert.converter.errors import ConverterInputError

    with pytest.raises(ConverterInputError, match="known tasks"):
        parse_options(True, tasks="glue:mnli", recipes=None)
    with pytest.raises(ConverterInputError, match="recipes"):
        parse_options(True, tasks=None, recipes="onnx:fp8")


def _stopped_at(step: str, options, out, monkeypatch) -> list[dict]:
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(glue, step, stop)
    with pytest.raises(KeyboardInterrupt):
        glue.run(options, out, log=lambda *a: None)
    return schema.read(out)["results"]


def test_a_run_stopped_while_converting_keeps_the_pytorch_rows(run, tmp_path, monkeypatch):
    root, options, results = run
    kept = _stopped_at("bundles", options, tmp_path / "stopped.json", monkeypatch)
    assert {(r["task"], r["stage"]) for r in kept} == {("glue:sst2", s) for s in
                                                       ("teacher", "without_recovery", "recovered")}
    files = [dict(schema.read(tmp_path / "stopped.json"), _path=str(tmp_path / "stopped.json"))]
    assert "glue:sst2: the run stopped before its artifacts" in "\n".join(glue_report.section(files, {}))


def test_a_run_stopped_while_recovering_keeps_the_teacher_row(run, tmp_path, monkeypatch):
    root, options, results = run
    kept = _stopped_at("recovered", options, tmp_path / "stopped.json", monkeypatch)
    assert [(r["task"], r["stage"]) for r in kept] == [("glue:sst2", "teacher")]
    teacher = next(r for r in results["results"] if r["task"] == "glue:sst2" and r["stage"] == "teacher"
                   and r["split"] == "dev")
    assert kept[0]["score"] == pytest.approx(teacher["score"], abs=1e-3)
    files = [dict(schema.read(tmp_path / "stopped.json"), _path=str(tmp_path / "stopped.json"))]
    text = "\n".join(glue_report.section(files, {}))
    assert "recovery not finished" in text and "glue:sst2: the run stopped during recovery" in text
