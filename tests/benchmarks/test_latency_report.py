"""latency --fast --peers end to end on the tiny bundle, then report on its results: schema and sane values."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import schema
from pocketbert.benchmarks.cli import cli

RUNNERS = {"onnx:fp32", "onnx:int8-dynamic", "tflite:fp32", "tflite:int8-dynamic", "peer:torch-eager-fp32",
           "peer:ort-optimum-fp32", "peer:ort-optimum-int8-dynamic", "peer:tflite-plain-fp32"}


@pytest.fixture(scope="module")
def results(tiny_bundle, bench_root):
    out = bench_root / "results" / "latency-fast.json"
    result = CliRunner().invoke(cli, ["latency", str(tiny_bundle), "--fast", "--peers", "--out", str(out),
                                      "--work-dir", str(bench_root)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_every_runner_measured_once(results):
    assert results["schema"] == schema.SCHEMA and results["fast"] is True
    records = results["results"]
    assert {r["runner"] for r in records} == RUNNERS and len(records) == len(RUNNERS)
    assert not [r for r in records if r["skipped"]], [r["skipped"] for r in records]


def test_records_are_sane(results):
    for r in results["results"]:
        assert schema.check_record(r) == [], r
        t = r["timed"]
        assert t["runs"] == 8 and 0 < t["min_ms"] <= t["p50_ms"] <= t["p90_ms"] <= t["p99_ms"] <= t["max_ms"]
        assert r["init_ms"] > 0 and r["first_ms"] > 0 and r["warmup"]["runs"] == 2
        assert 10 < r["rss_before_load_mb"] <= r["peak_rss_mb"] < 4000  # this process's own memory, not the parent's
        assert r["size_bytes"] > 0 and (r["threads"], r["seq_len"], r["batch"]) == (1, 32, 1)
        # A sanity bound against a wrong MAC count (an order of magnitude), not a speed figure: on fast mode's
        # 2-layer, 32-wide model every GEMM is a few microseconds, call overhead dominates, and the floor's
        # overhead estimate moves with the machine's load (1.0 alone, 2.03 in a full-suite run, 6.2 at load
        # average 20 on 2 cores): a MAC count wrong by an order of magnitude still exceeds 10.
        assert r["macs"] > 0 and 0 < r["floor"]["fraction"] <= 10, (r["runner"], r["floor"])
        assert r["floor"]["precision"] == ("int8" if "int8" in r["runner"] else "fp32")


def test_ratios_within_the_run(results):
    by = {r["runner"]: r for r in results["results"]}
    ref = by["peer:tflite-plain-fp32"]["timed"]["p50_ms"]
    assert by["onnx:fp32"]["speedup"]["vs_tflite_plain_fp32"] == pytest.approx(
        ref / by["onnx:fp32"]["timed"]["p50_ms"])
    assert by["peer:ort-optimum-fp32"]["speedup"]["vs_ort_optimum_fp32"] == pytest.approx(1.0)
    # the bundle has no --opt, so the plain TFLite peer is its own file: not converted twice
    assert by["peer:tflite-plain-fp32"]["size_bytes"] == by["tflite:fp32"]["size_bytes"]


def test_machine_and_floor_recorded(results):
    m = results["machine"]
    assert m["cpu"] and m["usable_cpus"] >= 1 and m["versions"]["onnxruntime"] and m["load_average_end"]
    floors = [f for f in results["gemm_floor"] if "shape" in f]
    assert {f["precision"] for f in floors} == {"fp32", "int8"} and all(0 < f["ms"] <= f["call_ms"] for f in floors)
    probes = [f for f in results["gemm_floor"] if "overhead_probe" in f]
    assert {p["overhead_probe"] for p in probes} >= {"torch.mm"}


def test_report_from_results(results, bench_root, tmp_path):
    out = tmp_path / "REPORT.md"
    result = CliRunner().invoke(cli, ["report", "--results", str(bench_root / "results"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "Fast mode results present" in text and "## Headline" in text and "tflite:int8-dynamic" in text
    # the provenance line names the run's CPU and its load at start and end
    [line] = [line for line in text.splitlines() if line.startswith("- `latency-fast.json`: latency; ")]
    assert results["machine"]["cpu"] in line and " → " in line and "FAST MODE" in line
    for png in ("latency_by_variant.png", "accuracy_vs_speedup.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"({png})" in text


def test_missing_bundle_and_unknown_backend(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(cli, ["latency", str(tmp_path / "nope")])
    assert missing.exit_code == 3 and "does not exist" in missing.output and "fix:" in missing.output
    bad = runner.invoke(cli, ["latency", str(tmp_path), "--backend", "tensorrt"])
    assert bad.exit_code == 2 and "unknown backend 'tensorrt'" in bad.output
    empty = runner.invoke(cli, ["report", "--results", str(tmp_path)])
    assert empty.exit_code == 3 and "no results files" in empty.output


def test_no_bundle_without_fast_is_an_error():
    result = CliRunner().invoke(cli, ["latency"])
    assert result.exit_code == 2 and "no BUNDLE given" in result.output


def test_peers_need_the_source_checkpoint(tiny_bundle, tmp_path):
    import shutil

    copy = Path(shutil.copytree(tiny_bundle, tmp_path / "b"))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["source"]["checkpoint"] = str(tmp_path / "gone")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(cli, ["latency", str(copy), "--fast", "--peers", "--work-dir", str(tmp_path)])
    assert result.exit_code == 3 and "--checkpoint DIR" in result.output


def _rec(runner, ms, *, variant="bundle", opts="", where="desktop", model="m"):
    timed = {"runs": 5, "mean_ms": ms, "p50_ms": ms, "p90_ms": ms, "p99_ms": ms, "std_ms": 0.0, "min_ms": ms,
             "max_ms": ms}
    return {"model": model, "runner": runner, "variant": variant, "opts": opts, "threads": 2, "seq_len": 128,
            "batch": 1, "where": where, "timed": timed, "skipped": None}


def test_ratios_pair_only_the_same_model_configuration_and_place():
    from pocketbert.benchmarks.latency import add_ratios

    records = [_rec("tflite:fp32", 20.0), _rec("peer:tflite-plain-fp32", 24.0, variant="peer"),
               _rec("peer:ort-optimum-fp32", 30.0, variant="peer"), _rec("tflite:int8-dynamic", 6.0, opts="nonorm"),
               _rec("tflite:int8-dynamic", 3.0, model="other"),
               _rec("tflite:fp32", 200.0, where="device:P"), _rec("tflite:int8-dynamic", 50.0, where="device:P")]
    add_ratios(records)
    assert records[3]["speedup"] == {"vs_tflite_plain_fp32": 4.0, "vs_ort_optimum_fp32": 5.0}  # the peer wins
    assert records[4]["speedup"] == {}  # another model: no reference in this run
    # on the phone there are no peers: the plain bundle's own tflite:fp32 is the reference
    assert records[6]["speedup"] == {"vs_tflite_plain_fp32": 4.0}


def test_tagged_checkpoints_join_their_model(tmp_path, tiny_bundle):
    """NAME@TAG=DIR: another checkpoint of model NAME, its variants tagged, bundle names distinct."""
    import json as _json
    import shutil

    from pocketbert.benchmarks import models

    source = _json.loads((tiny_bundle / "manifest.json").read_text())["source"]["checkpoint"]
    # an existing bundle is reused, not converted again: copy one in so only the naming is under test
    shutil.copytree(tiny_bundle, tmp_path / "bundles" / "tiny--recovered-plain-int8")
    [made] = models.build_bundles([f"tiny@recovered={source}"], ["plain-int8"], tmp_path, [32], log=lambda m: None,
                                  verify_samples=16)
    assert made.name == "tiny--recovered-plain-int8"
    entry = _json.loads((tmp_path / "bundles" / "models.json").read_text())[made.name]
    assert (entry["model"], entry["variant"], entry["random_weights"]) == ("tiny", "recovered/plain-int8", False)
    with pytest.raises(KeyError, match="not a Hugging Face checkpoint"):
        models.checkpoint(f"x={tmp_path}", tmp_path)


def test_refused_conversion_is_reported_and_skipped(tmp_path, monkeypatch, tiny_bundle):
    """A variant the converter refuses (full-integer int8 missing the bar) leaves no bundle and no row."""
    import shutil

    from pocketbert.benchmarks import models
    from pocketbert.converter import pipeline as converter_pipeline
    from pocketbert.converter.errors import VerificationError

    def refuse(options, reporter=None):
        raise VerificationError("tflite:int8-static: top-1 agreement 80% (needs ≥ 95%)")

    monkeypatch.setattr(converter_pipeline, "convert", refuse)
    source = json.loads((tiny_bundle / "manifest.json").read_text())["source"]["checkpoint"]
    shutil.copytree(tiny_bundle, tmp_path / "bundles" / "t--plain-int8")
    said = []
    made = models.build_bundles([f"t={source}"], ["plain-int8", "plain-int8-static"], tmp_path, [32], log=said.append)
    assert [p.name for p in made] == ["t--plain-int8"]
    assert any("refused by the converter: tflite:int8-static" in m for m in said)


def test_rounds_take_turns_and_merge_runs(tiny_bundle, tmp_path, monkeypatch):
    from pocketbert.benchmarks import latency

    order = []
    real = latency.run_in_subprocess

    def watched(spec):  # the real measurement, watched for which file runs when
        order.append(Path(spec["path"]).name)
        return real(spec)

    monkeypatch.setattr(latency, "run_in_subprocess", watched)
    out = tmp_path / "rounds.json"
    result = CliRunner().invoke(cli, ["latency", str(tiny_bundle), "--fast", "--backend", "onnx", "--runs", "6",
                                      "--rounds", "3", "--no-floor", "--out", str(out), "--work-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    records = json.loads(out.read_text())["results"]
    assert len(records) == 2 and all(r["rounds"] == 3 and r["timed"]["runs"] == 6 for r in records)
    assert all(schema.check_record(r) == [] and "times_ms" not in r for r in records)
    first, second = order[0], order[1]
    assert first != second and order == [first, second] * 3  # turns, not one runner's rounds in a row
