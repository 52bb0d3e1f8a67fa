"""The benchmarks and the converter's figures, hardened: size-frontier writes only inside --out and checks every
file before measuring, gates refuse another task's dev file, speed columns are speed-ups, ``--int8 auto`` times
its candidates in alternating rounds and says how sure it is, and the NER entity figure is the one a user
measures with the runtime's ``simple`` aggregation."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from pocketbert.benchmarks.cli import cli

from .conftest import NER_LABELS
from .shared import tiny_bench_bundle

SST2_DEV = "sentence\tlabel\na charming and often affecting journey .\t1\nunflinchingly bleak and desperate\t0\n" \
           "the acting is superb .\t1\na dull , lifeless film .\t0\n"
COLA_DEV = "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\ngj04\t0\t*\tThe more books I ask to " \
           "whom he will give, the more he reads.\ngj04\t1\t\tThe weights made the rope stretch over the pulley.\n"


@pytest.fixture(scope="module")
def tiny_bundle(tmp_path_factory):
    """The benchmarks' fast-mode bundle (tiny random BERT: onnx and tflite, fp32 and int8-dynamic), shared with
    tests/benchmarks when both run in one session."""
    return tiny_bench_bundle(tmp_path_factory)


@pytest.fixture
def sst2_bundle(tiny_bundle, tmp_path) -> Path:
    """A copy of the tiny bundle that records SST-2 teacher scores (as a recovered bundle does)."""
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "sst2-bundle"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["recovery"] = {"task": "glue:sst2", "metric": "accuracy",
                            "dev_scores": {"teacher": {"accuracy": 50.0}, "without_recovery": {"accuracy": 50.0}}}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


@pytest.fixture
def data_dir(tmp_path) -> Path:
    (tmp_path / "data" / "glue" / "SST-2").mkdir(parents=True)
    (tmp_path / "data" / "glue" / "SST-2" / "dev.tsv").write_text(SST2_DEV)
    return tmp_path / "data"


def _run(args: list[str]):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result


# --- size-frontier: nothing outside --out, every file checked first -----------------------------------------

def test_size_frontier_writes_only_inside_out(sst2_bundle, data_dir, tmp_path):
    parent = tmp_path / "parent"
    out = parent / "results"
    parent.mkdir()
    (parent / "size_frontier.png").write_bytes(b"the plot a report run drew")
    result = _run(["size-frontier", sst2_bundle, "--seq-len", "16", "--rounds", "1", "--data-dir", data_dir,
                   "--out", out])
    assert result.exit_code == 0, result.output
    assert (parent / "size_frontier.png").read_bytes() == b"the plot a report run drew"
    assert sorted(p.name for p in parent.iterdir()) == ["results", "size_frontier.png"]
    assert sorted(p.name for p in out.iterdir()) == ["size-frontier.json", "size_frontier.png"]
    assert "| speed-up vs fp32 |" in result.output and "| 1.00× |" in result.output


def test_size_frontier_refuses_a_corrupt_file_before_measuring_any(sst2_bundle, data_dir, tmp_path):
    int8 = sst2_bundle / "model.int8-dynamic.tflite"
    data = bytearray(int8.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, another SHA-256
    int8.write_bytes(bytes(data))
    result = _run(["size-frontier", sst2_bundle, "--seq-len", "16", "--rounds", "1", "--data-dir", data_dir,
                   "--out", tmp_path / "results"])
    assert result.exit_code == 3, result.output
    flat = " ".join(result.output.split())
    assert "model.int8-dynamic.tflite is corrupt" in flat and "fix: " in flat
    assert "tflite:fp32:" not in flat  # the fp32 file was never scored
    assert not (tmp_path / "results").exists()


def test_size_frontier_without_matplotlib_stops_before_measuring(sst2_bundle, data_dir, tmp_path, monkeypatch):
    from pocketbert.benchmarks import size_frontier

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as after set-up with the convert extra only
    monkeypatch.setattr(size_frontier, "measure", lambda *a, **k: pytest.fail("measured without matplotlib"))
    result = _run(["size-frontier", sst2_bundle, "--data-dir", data_dir, "--out", tmp_path / "results"])
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and "matplotlib, which is not installed" in flat, result.output
    assert "pip install -e '.[bench]'" in flat and not (tmp_path / "results").exists()


def test_latency_with_out_elsewhere_keeps_its_work_files_out_of_the_checkout(tiny_bundle, tmp_path, monkeypatch):
    from pocketbert.benchmarks.cli import common

    checkout_cache = tmp_path / "checkout" / ".cache"
    monkeypatch.setattr(common, "WORK", checkout_cache)  # where a checkout keeps them when results stay there too
    monkeypatch.setenv("POCKETBERT_CACHE", str(tmp_path / "user-cache"))
    result = _run(["latency", tiny_bundle, "--fast", "--no-floor", "--backend", "onnx", "--out",
                   tmp_path / "elsewhere" / "latency.json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "elsewhere" / "latency.json").is_file()
    assert list((tmp_path / "user-cache" / "benchmarks" / "inputs").glob("*.npz"))
    assert not checkout_cache.exists()


# --- gates: the dev file the bundle records ------------------------------------------------------------------

def test_gates_read_a_recorded_relative_dev_path_from_the_bundle_folder(tiny_bundle, tmp_path, monkeypatch):
    """Converted with --dev data/dev.tsv: from another folder, that folder's data/dev.tsv is not the dev file."""
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["recovery"] = {"task": "train.tsv", "train_file": "train.tsv", "dev_file": "data/dev.tsv",
                            "metric": "accuracy", "dev_scores": {"teacher": {"accuracy": 50.0}}}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "dev.tsv").write_text(SST2_DEV)
    monkeypatch.chdir(elsewhere)
    refused = _run(["gates", bundle])
    flat = " ".join(refused.output.split())
    assert refused.exit_code == 3 and "'data/dev.tsv', read from the bundle folder) is not here" in flat, flat
    assert "--dev DEV_FILE" in flat and "gates pass" not in flat
    (bundle / "data").mkdir()
    (bundle / "data" / "dev.tsv").write_text(SST2_DEV)
    scored = _run(["gates", bundle, "--limit", "4"])
    assert scored.exit_code in (0, 1) and "gates pass" in scored.output, scored.output
    assert f"| {bundle / 'data' / 'dev.tsv'} |" in scored.output  # the "scored on" column


# --- gates: another task's dev file ------------------------------------------------------------------------

def test_gates_refuse_another_tasks_dev_file(sst2_bundle, data_dir, tmp_path):
    cola = tmp_path / "cola-dev.tsv"
    cola.write_text(COLA_DEV)
    result = _run(["gates", sst2_bundle, "--dev", cola, "--data-dir", data_dir])
    assert result.exit_code == 3, result.output
    flat = " ".join(result.output.split())
    assert "laid out as CoLA's" in flat and "glue:sst2" in flat and "another task's file" in flat
    assert "fix: pass the dev file of the task the bundle was trained on" in flat
    assert "gates pass" not in flat


@pytest.mark.parametrize("labels, problem", [
    (["2", "0"], "label id(s) ['2']"),
    (["acceptable", "unacceptable"], "labels ['acceptable', 'unacceptable'] that the bundle"),
])
def test_gates_refuse_a_dev_file_whose_labels_the_bundle_lacks(sst2_bundle, data_dir, tmp_path, labels, problem):
    dev = tmp_path / "dev.tsv"
    dev.write_text("sentence\tlabel\n" + "".join(f"some sentence {i} .\t{v}\n" for i, v in enumerate(labels)))
    result = _run(["gates", sst2_bundle, "--dev", dev, "--data-dir", data_dir])
    assert result.exit_code == 3, result.output
    assert problem in " ".join(result.output.split())


def test_gates_score_label_names_through_the_bundles_order(sst2_bundle, data_dir, tmp_path):
    """A file naming only LABEL_1 numbers it 0 when read; scoring maps the name to the bundle's id 1, so every
    artifact scores exactly as with the id written out (7 sentences: read as id 0, the score would be 100 minus it)."""
    from pocketbert.benchmarks import gates

    scores = {}
    for name, label in (("names", "LABEL_1"), ("ids", "1")):
        dev = tmp_path / f"{name}.tsv"
        dev.write_text("sentence\tlabel\n" + "".join(f"some sentence {i} .\t{label}\n" for i in range(7)))
        rows = gates.check(Path(sst2_bundle), dev=dev, data_dir=data_dir, progress=lambda *a: None)
        scores[name] = {r["runner"]: r["score"] for r in rows}
    assert scores["names"] == scores["ids"] and len(scores["ids"]) >= 2


def test_gates_score_a_dev_file_of_the_bundles_own_task(sst2_bundle, data_dir, tmp_path):
    dev = tmp_path / "my-sst2-dev.tsv"
    dev.write_text(SST2_DEV)
    result = _run(["gates", sst2_bundle, "--dev", dev, "--data-dir", data_dir, "--limit", "4"])
    assert result.exit_code in (0, 1), result.output  # scored (a random model may fail its gates)
    assert "gates pass" in result.output


# --- speed columns read as speed-ups ----------------------------------------------------------------------

def test_converter_summary_shows_a_speed_up_not_a_time_ratio(tmp_path):
    from pocketbert.converter.cli import render
    from pocketbert.converter.cli.common import out_console

    def art(recipe, ms):
        verification = {"real_sentences": {"max_abs": 1e-6, "cosine": 1.0, "top1_agreement": 1.0}}
        if recipe.endswith("fp32"):
            verification["fixed_inputs"] = {"max_abs": 1e-6}
        return SimpleNamespace(recipe=recipe, file=f"{recipe}.onnx", bytes=10**6, verification=verification,
                               latency_ms=ms, seconds=1.0, details={})

    arts = [art("onnx:fp32", 16.9), art("onnx:int8-dynamic", 10.0)]
    manifest = {"artifacts": [{"latency_ms": {"sequence": 128}}], "source": {"head_initialized": False},
                "verification": {"samples": 8, "texts": "built-in"}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    result = SimpleNamespace(manifest=manifest, artifacts=arts, bundle=tmp_path, stage_seconds={"verify": 1.0},
                             steps=[])
    with out_console.capture() as captured:
        render.summary(result)
    text = captured.get()
    assert "speed-up vs fp32" in text and "1.69×" in text and "1.00×" in text
    assert "0.59x" not in text


# --- --int8 auto: alternating rounds and how sure the choice was --------------------------------------------

def test_alternating_rounds_take_turns_and_confidence_counts_rounds():
    from pocketbert.converter.timing import candidate_timing as quantization

    calls = []
    runners = [lambda feeds, name=name: calls.append(name) for name in "AB"]
    rounds = quantization.alternating_rounds_ms(runners, {}, rounds=4, runs=2)
    assert [len(r) for r in rounds] == [4, 4]
    timed = calls[4:]  # after two warm-up calls each
    assert timed == list("AABB" "BBAA" "AABB" "BBAA")
    best = {"ms_rounds": [10.0, 10.0, 12.0, 10.0, 10.0]}
    other = {"ms_rounds": [20.0, 19.0, 11.0, 21.0, 20.0]}
    sure = quantization.confidence(best, [best, other])
    assert sure["rounds_won"] == "4 of 5" and sure["runner_up_over_chosen"][2] == pytest.approx(0.917)
    assert sure["median_ratio"] == 2.0
    assert quantization.confidence(best, [best])["rounds_won"] is None


def test_int8_auto_records_rounds_and_confidence(checkpoints, options):
    from pocketbert.converter.pipeline import convert

    opts = options(checkpoints["bert"]["classification"], formats="onnx", opts="int8", int8="auto",
                   allow_accuracy_loss=True, int8_min_cosine=0.9)
    manifest = json.loads((convert(opts).bundle / "manifest.json").read_text())
    selection = next(a for a in manifest["artifacts"] if a["precision"].startswith("int8"))["details"]["selection"]
    assert "5 alternating rounds of 6 runs" in selection["rule"]
    for candidate in selection["candidates"]:
        assert len(candidate["rounds_ms"]) == 5
        assert candidate["plain_latency_ms"] == pytest.approx(np.median(candidate["rounds_ms"]), abs=1e-3) \
            or candidate["latency_ms"] == pytest.approx(np.median(candidate["rounds_ms"]), abs=1e-3)
    confidence = selection["confidence"]
    assert confidence["rounds_won"] is None or confidence["rounds_won"].endswith(" of 5")


# --- NER: the manifest's entity figure is what the runtime's simple aggregation gives ---------------------------

def _runtime_entities(tokenizer, text: str, logits: np.ndarray) -> set:
    from pocketbert.runtime import ner

    enc = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    window = ner.TokenizedWindow(ids=enc["input_ids"], tokens=tokenizer.convert_ids_to_tokens(enc["input_ids"]),
                                 offsets=enc["offset_mapping"], special=enc["special_tokens_mask"])
    how = ner.Decoding(labels=NER_LABELS, unk_id=tokenizer.unk_token_id, word_aware=True,
                       detokenize=lambda words: " ".join(words))
    return {(e["start"], e["end"], e["entity_group"])
            for e in ner.decode(text, window, logits[:len(enc["input_ids"])], "simple", how)}


def test_entity_f1_is_what_the_runtime_reports_with_simple_aggregation(checkpoints):
    """A word's later pieces are never trained: int8 flips them where first pieces hold.  Read at first pieces
    the two models agree fully; the runtime's entities (simple aggregation) do not, and the figure says so."""
    from transformers import AutoTokenizer

    from pocketbert.converter.checks import verify
    from pocketbert.converter.conversion import Encoder

    tokenizer = AutoTokenizer.from_pretrained(checkpoints["bert"]["ner"])
    texts = ["Emmanuel Macron visited Strasbourg and Wolfsburg yesterday .",
             "Kristalina Georgieva spoke in Ouagadougou ."]
    encoder = Encoder(tokenizer, ("input_ids", "attention_mask", "token_type_ids"), 64, NER_LABELS)
    batches, view = encoder.batches(texts), encoder.entity_view(texts)
    # the float model: every word a PER entity read at its first piece, its later pieces O
    starts = view.word_starts[0]
    ref = [np.where(starts[..., None], np.eye(len(NER_LABELS))[1], np.eye(len(NER_LABELS))[0]) * 10.0 - 5.0]
    out = [r.copy() for r in ref]
    # flip one later piece of each text to B-LOC (what int8 does to an untrained position)
    for row, mask, attended in zip(out[0], starts, batches[0]["attention_mask"]):
        later = [p for p in range(1, int(attended.sum()) - 1) if not mask[p]]
        assert later, "each text needs a word of several pieces"
        row[later[0]] = -5.0
        row[later[0], 5] = 5.0
    figure = verify.compare(ref, out, [b["attention_mask"] for b in batches], view)
    assert figure.word_entity_f1 == 1.0  # the old figure: first pieces agree
    mine = [_runtime_entities(tokenizer, t, r) for t, r in zip(texts, ref[0])]
    theirs = [_runtime_entities(tokenizer, t, r) for t, r in zip(texts, out[0])]
    found = sum(len(a & b) for a, b in zip(mine, theirs))
    user = 2 * found / (sum(map(len, mine)) + sum(map(len, theirs)))
    assert user < 1.0 and figure.entity_f1 == pytest.approx(user)
    assert figure.entities == sum(map(len, mine))


# --- AVX2 without VNNI: the fixed rule and the report -----------------------------------------------------------

def test_fixed_rule_takes_tflite_int4_before_int8_on_avx2_without_vnni():
    from pocketbert.runtime import choice
    from pocketbert.runtime.bundle import Artifact

    def arts(*recipes):
        return [Artifact(recipe=r, backend=r.split(":")[0], precision=r.split(":")[1], file=r, path=Path(r),
                         details={}, passed=True) for r in recipes]

    phone = arts("tflite:int8-dynamic", "tflite:int4-dynamic", "tflite:fp32")
    assert choice.fixed_rule_order(phone, ["sse4_1", "avx2", "fma"])[0].recipe == "tflite:int4-dynamic"
    assert choice.fixed_rule_order(phone, ["avx2", "avx512_vnni"])[0].recipe == "tflite:int8-dynamic"
    assert choice.fixed_rule_order(phone, ["asimd", "asimddp"])[0].recipe == "tflite:int8-dynamic"
    both = arts("onnx:int8-dynamic", "tflite:int8-dynamic", "tflite:int4-dynamic")
    assert choice.fixed_rule_order(both, ["avx2"])[0].recipe == "onnx:int8-dynamic"
    assert choice.fixed_rule_order(arts("tflite:int8-dynamic", "tflite:fp32"), ["avx2"])[0].recipe == \
        "tflite:int8-dynamic"  # no int4 file: int8 is still faster than fp32 there


def test_report_keeps_the_avx2_section_with_its_source(tmp_path):
    from pocketbert.benchmarks import report, schema

    (tmp_path / "results").mkdir()
    data = schema.new_file("corpus", fast=True)
    schema.write(data, tmp_path / "results" / "corpus-fast.json")
    text = report.build(tmp_path / "results", tmp_path / "REPORT.md").read_text()
    assert "## AVX2 without VNNI" in text
    assert "| sst2-phone tflite:int4-dynamic | 23.69 (2.13×) | 12.00 (1.96×) |" in text
    assert "AMD EPYC family 25 model 1 (`lscpu` flags avx2 fma f16c" in text and "2026-12-02" in text
    for source in ("src/configs/gemm-config.c", "src/qs8-gemm/MRx8c8-avx2.c.in", "src/xnnpack/intrinsics-polyfill.h",
                   "onnxruntime/core/mlas/lib/x86_64/QgemmU8X8KernelAvx2.S"):
        assert source in text
