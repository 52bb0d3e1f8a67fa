"""The int8 dev gate held at conversion time (converter.checks.dev_gate): the converter scores every artifact on the
task's dev split exactly as ``pocketbert-bench gates`` does, and an int8 file the gate would fail is not shipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketbert.benchmarks.accuracy import evaluate
from pocketbert.benchmarks.gates import recorded_scores
from pocketbert.converter.checks import dev_gate
from pocketbert.converter.events import Note
from pocketbert.converter.pipeline import convert
from pocketbert.converter.stages import STAGES
from pocketbert.converter.stages.quantize import QuantizeStage
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune
from pocketbert.runtime.bundle import read_manifest

from .conftest import DATA


@pytest.fixture(scope="module")
def trained(tmp_path_factory, checkpoints) -> Path:
    """A tiny BERT fine-tuned a little on SST-2: its training record names the task, so its dev split is known."""
    out = tmp_path_factory.mktemp("trained") / "sst2"
    finetune(FinetuneOptions(checkpoint=str(checkpoints["bert"]["none"]), task="glue:sst2", out=out,
                             budget=loop.Budget(steps=20), lr=2e-3, batch_size=16, data_dir=DATA, train_limit=320,
                             dev_limit=64, progress=False), log=lambda *a: None)
    return out


def _split(metric="accuracy"):
    return dev_gate.DevSplit(features=None, metric=metric, source="glue/SST-2/dev.tsv")


def test_an_int8_file_is_held_to_the_best_float_file_less_the_allowance():
    kinds = {"onnx:fp32": "fp32", "tflite:fp32": "fp32", "onnx:int8-dynamic": "int8-dynamic",
             "onnx:int8-static": "int8-static", "tflite:int4-dynamic": "int4-dynamic"}
    scores = {"onnx:fp32": 88.99, "tflite:fp32": 89.10, "onnx:int8-dynamic": 88.60, "onnx:int8-static": 88.59,
              "tflite:int4-dynamic": 80.0}
    gates = dev_gate.judged(scores, kinds, _split())
    assert set(gates) == {"onnx:int8-dynamic", "onnx:int8-static"}  # int4 files have the teacher's gate, not this
    assert gates["onnx:int8-dynamic"]["passed"] and gates["onnx:int8-dynamic"]["float"] == 89.10  # exactly 0.5
    assert not gates["onnx:int8-static"]["passed"]
    said = dev_gate.refusal("onnx:int8-static", gates["onnx:int8-static"])
    assert said.startswith("onnx:int8-static not shipped: dev accuracy 88.59 on glue/SST-2/dev.tsv is 0.51 below the "
                           "float file's 89.10, more than the 0.5 an int8 file may lose")
    assert dev_gate.judged({"onnx:int8-dynamic": 1.0}, {"onnx:int8-dynamic": "int8-dynamic"}, _split()) == {}


def test_the_refusal_of_a_plain_file_names_what_each_later_rung_reached():
    gate = {"split": "glue/SST-2/dev.tsv", "metric": "accuracy", "score": 88.19, "float": 88.99, "allowed_below": 0.5,
            "passed": False}
    folded = {"linears": 12, "meets_bar": True, "dev_gate": {**gate, "score": 88.30}}
    slow = {"roles": [], "linears_in_float": 0, "linears": 26, "accepted": True,
            "speed": {"shipped": False, "tried": [{"latency_ms": 13.1, "fp32_latency_ms": 13.4}]}}
    note = dev_gate.refusal("onnx:int8-static", gate,
                            details={"smoothed_ladder": {"float_fallback": slow, "folded_attempt": folded}})
    assert note.endswith("has fit); its later rungs: smoothed with its scales folded in (12 Linears), dev accuracy "
                         "88.30 (off the gate); every Linear smoothed, 13.1 ms against fp32's 13.4 ms (did not pay)")
    short = {"roles": ["ffn_in"], "linears_in_float": 6, "linears": 26, "accepted": False}
    note = dev_gate.refusal("onnx:int8-static", gate, details={"smoothed_ladder": {"float_fallback": short}})
    assert note.endswith("; its later rungs: every Linear smoothed, 6 of 26 Linears in float, short of the int8 bar on "
                         "the calibration text")
    assert dev_gate.refusal("onnx:int8-static", gate, details={}).endswith("has fit)")


def test_the_converter_scores_every_artifact_as_the_gates_do(trained, options, tmp_path):
    result = convert(options(trained, opts="int8", formats="onnx,tflite", buckets=[64]))
    manifest = read_manifest(result.bundle)
    recorded = {a["recipe"]: a["details"]["dev_score"] for a in manifest["artifacts"]}
    assert set(recorded) == {"onnx:fp32", "onnx:int8-dynamic", "tflite:fp32", "tflite:int8-dynamic"}
    gated = evaluate([result.bundle], "glue:sst2", "dev", data_dir=str(DATA), progress=lambda *a: None)["results"]
    assert len(gated) == 4 and all(recorded[r["runner"]]["score"] == r["score"] for r in gated)
    assert all(r["split"] == "glue/SST-2/dev.tsv" and r["metric"] == "accuracy" for r in recorded.values())
    int8 = [a["details"]["dev_gate"] for a in manifest["artifacts"] if a["recipe"].endswith("int8-dynamic")]
    assert len(int8) == 2 and all(g["passed"] for g in int8)
    # the gates take those figures instead of running the files again, and only for the very dev file
    reused = recorded_scores(manifest, "glue:sst2", str(DATA))
    assert set(reused) == set(recorded)
    again = evaluate([result.bundle], "glue:sst2", "dev", data_dir=str(DATA), progress=lambda *a: None,
                     recorded=reused)["results"]
    assert [(r["runner"], r["score"]) for r in again] == [(r["runner"], r["score"]) for r in gated]
    assert all("the converter's score" in r["notes"][0] for r in again)
    other = tmp_path / "dev.tsv"
    other.write_text((DATA / "glue" / "SST-2" / "dev.tsv").read_text()[:-1])  # one byte short: another file
    assert recorded_scores(manifest, str(other), str(DATA)) == {}


def test_an_int8_file_the_gate_would_fail_is_not_shipped_unless_accepted(trained, options, tmp_path, monkeypatch):
    monkeypatch.setattr(dev_gate, "INT8_EXTRA", -100.0)  # every int8 file now "loses" more than it may
    heard = []
    result = convert(options(trained, opts="int8", out=tmp_path / "refused"), heard.append)
    manifest = read_manifest(result.bundle)
    assert [a["recipe"] for a in manifest["artifacts"]] == ["onnx:fp32"]
    assert not (result.bundle / "model.int8-dynamic.onnx").exists()
    said = [e.message for e in heard if isinstance(e, Note) and e.warning and "onnx:int8-dynamic not shipped: dev "
            "accuracy" in e.message]
    assert len(said) == 1 and said[0] in manifest["notes"]
    kept = convert(options(trained, opts="int8", out=tmp_path / "accepted", allow_accuracy_loss=True))
    manifest = read_manifest(kept.bundle)
    assert [a["recipe"] for a in manifest["artifacts"]] == ["onnx:fp32", "onnx:int8-dynamic"]
    assert any("shipped all the same (--allow-accuracy-loss)" in n for n in manifest["notes"])


def test_no_dev_split_no_gate(checkpoints, options):
    """A checkpoint that records no task is held to verification's bars alone (nothing is scored)."""
    result = convert(options(checkpoints["bert"]["classification"], opts="int8"))
    assert all("dev_score" not in a["details"] for a in read_manifest(result.bundle)["artifacts"])


def test_no_dev_gate_scores_nothing_says_so_and_leaves_the_gates_to_score(trained, options, monkeypatch):
    """--no-dev-gate: the dev split is here, but no file is run on it; the ladders chase their target alone, the
    notes say so, and the gates find no converter's score to take (they score the bundle themselves)."""
    runs = _counting_scores(monkeypatch)
    result = convert(options(trained, opts="int8", dev_gate=False))
    manifest = read_manifest(result.bundle)
    assert runs == []
    assert [a["recipe"] for a in manifest["artifacts"]] == ["onnx:fp32", "onnx:int8-dynamic"]
    assert all(not {"dev_score", "dev_gate", "ladder_dev_gate"} & set(a["details"]) for a in manifest["artifacts"])
    assert [n for n in manifest["notes"] if "(--no-dev-gate)" in n] == [
        "no file was scored on SST-2/dev.tsv (--no-dev-gate): the quantised files were held to verification's bars "
        "alone; pocketbert-bench gates scores them"]
    assert recorded_scores(manifest, "glue:sst2", str(DATA)) == {}


def _counting_scores(monkeypatch) -> list:
    runs, original = [], dev_gate.score
    monkeypatch.setattr(dev_gate, "score", lambda run, split, names: runs.append(split.source)
                        or original(run, split, names))
    return runs


def test_a_plain_int8_file_short_of_its_target_ships_when_it_holds_the_dev_gate(trained, options, monkeypatch):
    """The ladder's target stands in for the dev gate: with the dev split here, a plain file that misses the target
    (1.01: out of reach) and meets the bar is held to the gate itself, and within it ships as it is, with no
    smoothing and no float fallback; the verify stage takes the ladder's scores instead of running the files again
    (a .tflite file's too, though the metadata stage rewrote it in between).  Static int8 is built plain first: the
    plain dynamic file missing the target predicts the plain static one does, which without a dev split sends static
    straight to the smoothed rung, but plain static may hold the gate all the same."""
    runs = _counting_scores(monkeypatch)
    result = convert(options(trained, recipes="onnx:int8-dynamic,onnx:int8-static,tflite:int8-dynamic", buckets=[64],
                             int8_min_cosine=0.0, int8_min_agreement=0.0, int8_target_agreement=1.01))
    by_recipe = {a["recipe"]: a for a in read_manifest(result.bundle)["artifacts"]}
    for recipe in ("onnx:int8-dynamic", "onnx:int8-static", "tflite:int8-dynamic"):
        details = by_recipe[recipe]["details"]
        assert details["smoothing"] is None and "smoothed_ladder" not in details and "plain_skipped" not in details
        assert details["float_fallback"]["roles"] == [] and not details["float_fallback"]["target_met"]
        ladder = details["ladder_dev_gate"]
        assert ladder["passed"] and ladder["score"] == details["dev_score"]["score"] == details["dev_gate"]["score"]
    assert len(runs) == 5  # each format's float file and each int8 file, once each
    said = [step for stage, step, _ in result.steps if stage == "verify" and "dev gate" in step]
    assert said == ["Taking 5 artifacts' scores on glue/SST-2/dev.tsv from the int8 ladders (the int8 dev gate)"]


def test_a_plain_int8_file_the_dev_gate_fails_goes_on_up_the_ladder(trained, options, monkeypatch, tmp_path):
    monkeypatch.setattr(dev_gate, "INT8_EXTRA", -100.0)  # every int8 file now "loses" more than it may
    result = convert(options(trained, opts="int8", int8_min_cosine=0.0, int8_min_agreement=0.0,
                             int8_target_agreement=1.01, allow_accuracy_loss=True, out=tmp_path / "climbed"))
    details = {a["recipe"]: a for a in read_manifest(result.bundle)["artifacts"]}["onnx:int8-dynamic"]["details"]
    assert not details["ladder_dev_gate"]["passed"]
    # the folded rung and the smoothed ladder ran, could not reach the target either, and plain shipped as the
    # cheapest step; the note says what each later rung reached
    ladder = details["smoothed_ladder"]
    assert ladder["float_fallback"]["search"] and details["smoothing"] is None
    assert not ladder["folded_attempt"]["dev_gate"]["passed"] and not ladder["dev_gate"]["passed"]
    note = next(n for n in read_manifest(result.bundle)["notes"] if n.startswith("onnx:int8-dynamic: dev accuracy"))
    folded, smoothed = ladder["folded_attempt"]["dev_gate"]["score"], ladder["dev_gate"]["score"]
    assert (f"; its later rungs: smoothed with its scales folded in ({ladder['folded_attempt']['linears']} Linears), "
            f"dev accuracy {folded:.2f} (off the gate); every Linear smoothed") in note
    assert f"dev accuracy {smoothed:.2f} (off the gate); shipped all the same (--allow-accuracy-loss)" in note


def test_a_smoothed_int8_file_short_of_its_target_ships_when_it_holds_the_dev_gate_the_plain_file_lost(
        trained, options, monkeypatch, tmp_path):
    """Short of the target on every rung (1.01: out of reach), the ladder's file is held to the dev gate before the
    plain file, which lost it, is taken back: here the float file scores 80, the plain int8 file and the one with its
    scales folded 10, and every later file 79.9 (0.1 below: within the gate), so the smoothed file ships, and
    verification takes its score."""
    from pocketbert.converter.cli.render import held_the_dev_gate_line

    scores = iter([80.0, 10.0, 10.0])
    monkeypatch.setattr(dev_gate, "score", lambda run, split, names: next(scores, 79.9))
    result = convert(options(trained, opts="int8", int8_min_cosine=0.0, int8_min_agreement=0.0,
                             int8_target_agreement=1.01, out=tmp_path / "smoothed"))
    details = {a["recipe"]: a for a in read_manifest(result.bundle)["artifacts"]}["onnx:int8-dynamic"]["details"]
    assert details["smoothing"]["method"] == "smoothquant" and "smoothed_ladder" not in details
    assert "folded" not in details["smoothing"]
    assert not details["float_fallback"]["target_met"] and details["float_fallback"]["accepted"]
    assert details["unsmoothed_attempt"]["dev_gate"]["score"] == 10.0
    assert not details["unsmoothed_attempt"]["dev_gate"]["passed"]
    assert details["ladder_dev_gate"]["passed"] and details["dev_gate"]["score"] == 79.9
    line = held_the_dev_gate_line("onnx:int8-dynamic", details, 1.01)
    assert "short of the 101.0% target, but dev accuracy 79.90 against its float file's 80.00 holds the dev gate " \
           "(at most 0.5 below); the plain int8 file's 10.00 did not" in line


def test_a_plain_int8_file_that_loses_the_dev_gate_ships_smoothed_with_its_scales_folded_when_that_holds_it(
        trained, options, monkeypatch, tmp_path):
    """The rung after plain smooths only the Linears whose input another Linear produces, its scales folded into that
    Linear's rows: the plain file's graph (no Mul, so ONNX Runtime still fuses attention), timed once, with the plain
    file.  Float scores 80, plain int8 10, the folded file 79.9: it ships, and no Mul-smoothed ladder runs."""
    import onnx
    from transformers import AutoConfig

    from pocketbert.converter.cli.render import folded_line

    timed = []
    stages = tuple(QuantizeStage(timer=lambda runners, feeds: timed.append(len(runners)) or
                                 [[5.0] * 5, [10.0] * 5]) if isinstance(s, QuantizeStage) else s for s in STAGES)
    monkeypatch.setattr(dev_gate, "score", lambda run, split, names: next(scores, 79.9))
    settings = dict(opts="int8", int8_min_cosine=0.0, int8_min_agreement=0.0, measure_latency=True)
    scores = iter([80.0, 10.0])
    folded = convert(options(trained, **settings, out=tmp_path / "folded"), stages=stages)
    scores = iter([80.0])
    plain = convert(options(trained, **settings, out=tmp_path / "plain"), stages=stages)
    details = {a["recipe"]: a for a in read_manifest(folded.bundle)["artifacts"]}["onnx:int8-dynamic"]["details"]
    blocks = AutoConfig.from_pretrained(trained).num_hidden_layers  # GELU (no relu): only attention outputs fold
    assert details["smoothing"]["folded"] and details["smoothing"]["linears"] == blocks
    assert details["unsmoothed_attempt"]["dev_gate"]["score"] == 10.0 and details["dev_gate"]["score"] == 79.9
    assert "smoothed_ladder" not in details and details["float_fallback"]["roles"] == []
    assert details["float_fallback"]["speed"]["tried"][0]["timed"].endswith("one graph")
    ops = [sorted(n.op_type for n in onnx.load(r.bundle / "model.int8-dynamic.onnx").graph.node)
           for r in (folded, plain)]
    assert ops[0] == ops[1]
    assert len(timed) == 2  # the plain file of each conversion, once: the folded file is not timed again
    assert folded_line("onnx:int8-dynamic", details) == (
        f"  onnx:int8-dynamic: smoothed, {blocks} Linears' input scales folded into the Linears producing those inputs "
        "(nothing added at run time: the plain file's graph and speed), since the plain int8 file's dev accuracy 10.00 "
        "was more than 0.5 below its float file's 80.00")
    # static int8 without a dev split starts past plain when plain dynamic missed: the line says which file missed
    assert folded_line("onnx:int8-static", {"smoothing": {"linears": 12}, "unsmoothed_attempt": None}).endswith(
        "since the plain dynamic int8 file missed the target on the calibration text")


def test_a_plain_int8_file_at_its_target_that_loses_the_dev_gate_goes_on_up_the_ladder(trained, options, monkeypatch,
                                                                                        tmp_path):
    """The calibration-text target met is not the gate kept: with the dev split here, a plain file at its target
    that loses the gate is smoothed, and the plain file's gate record says why."""
    monkeypatch.setattr(dev_gate, "INT8_EXTRA", -100.0)  # every int8 file now "loses" more than it may
    result = convert(options(trained, opts="int8", int8_min_cosine=0.0, int8_min_agreement=0.0,
                             int8_target_agreement=0.0, allow_accuracy_loss=True, out=tmp_path / "at-target"))
    details = {a["recipe"]: a for a in read_manifest(result.bundle)["artifacts"]}["onnx:int8-dynamic"]["details"]
    assert details["smoothing"] is not None and details["float_fallback"]["target_met"]
    plain = details["unsmoothed_attempt"]
    assert plain["top1_agreement"] >= 0.0 and not plain["dev_gate"]["passed"]


def test_a_file_shipped_short_of_its_target_on_the_dev_gate_says_so_with_both_figures():
    from pocketbert.converter.cli.render import held_the_dev_gate_line

    fallback = {"roles": [], "search": [{"float_roles": [], "top1_agreement": 0.9990, "entity_f1": 0.9949}]}
    gate = {"metric": "f1", "score": 89.7479, "float": 89.8604, "allowed_below": 0.5, "passed": True}
    line = held_the_dev_gate_line("tflite:int8-dynamic", {"float_fallback": fallback, "ladder_dev_gate": gate}, 0.995)
    # 99.49% is short of 99.5%, and the line must not round it up to the target it missed
    assert "99.49% agreement on the calibration text, short of the 99.5% target" in line
    assert "dev f1 89.75 against its float file's 89.86 holds the dev gate (at most 0.5 below)" in line
