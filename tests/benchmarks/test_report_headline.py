"""The report's headline picks the fastest variant that keeps its accuracy, not the fastest outright."""

from __future__ import annotations

from pocketbert.benchmarks.latency_report import headline
from pocketbert.benchmarks.provenance_report import run_label
from pocketbert.benchmarks.report_plots import plots


def _latency(runner, p50, opts=None, tag=None):
    return {"model": "m", "model_label": "M", "threads": 2, "batch": 1, "seq_len": 128, "variant": "bundle",
            "runner": runner, "opts": opts, "variant_name": f"{tag}/plain-int8" if tag else "plain-int8",
            "timed": {"p50_ms": p50},
            "speedup": {"vs_tflite_plain_fp32": 10.0 / p50, "vs_ort_optimum_fp32": 12.0 / p50}}


def _accuracy(runner, delta, opts=None, tag=None):
    return {"model": "m", "runner": runner, "opts": opts, "variant_name": f"{tag}/plain-int8" if tag else "plain-int8",
            "task": "glue:sst2", "delta": delta}


def test_headline_skips_a_variant_that_lost_its_accuracy():
    measured = [_latency("tflite:fp32", 10.0), _latency("tflite:int8-dynamic", 2.0, opts="nonorm,relu"),
                _latency("tflite:int8-dynamic", 2.5, opts="nonorm,relu", tag="recovered")]
    accuracy = [_accuracy("tflite:fp32", 0.0), _accuracy("tflite:int8-dynamic", -38.4, opts="nonorm,relu"),
                _accuracy("tflite:int8-dynamic", -0.46, opts="nonorm,relu", tag="recovered")]
    [row] = [line for line in headline(measured, accuracy) if line.startswith("| M ")]
    assert "[recovered]" in row and "| 2.50 |" in row and "4.00x" in row and "-0.46" in row
    # without accuracy figures the fastest wins, and the row says accuracy was not measured
    [row] = [line for line in headline(measured, []) if line.startswith("| M ")]
    assert "| 2.00 |" in row and "not measured" in row


def test_latency_vs_length_plot_only_for_models_measured_at_several_lengths(tmp_path):
    """Only models measured at several lengths get a panel; a one-length model makes no plot at all."""
    def at(seq, runner, p50, model="m"):
        return {**_latency(runner, p50), "model": model, "model_label": model.upper(), "seq_len": seq,
                "backend": "tflite", "variant": "peer" if runner.startswith("peer") else "bundle"}

    single = [at(128, "tflite:int8-dynamic", 2.0), at(128, "peer:tflite-plain-fp32", 9.0)]
    assert "vs_seq" not in plots(single, [], tmp_path)
    swept = single + [at(32, "tflite:int8-dynamic", 0.8), at(32, "peer:tflite-plain-fp32", 3.0),
                      at(128, "tflite:int8-dynamic", 5.0, model="n")]
    made = plots(swept, [], tmp_path)
    assert made["vs_seq"] == "latency_vs_seq_len.png" and (tmp_path / made["vs_seq"]).stat().st_size > 10_000


def test_headline_keeps_runs_on_different_cpus_apart():
    """A faster CPU's run must not make another CPU's variant look fastest: one row per model and run."""
    amx = {"_path": "latency-a.json", "machine": {"cpu": "Xeon", "matrix_flags": ["avx2", "avx512_vnni", "amx_int8"]}}
    avx2 = {"_path": "latency-b.json", "machine": {"cpu": "EPYC", "matrix_flags": ["avx2", "fma"]}}
    measured = [{**_latency("tflite:int8-dynamic", 2.0), "_run": run_label(amx)},
                {**_latency("tflite:int8-dynamic", 6.0), "_run": run_label(avx2)}]
    rows = [line for line in headline(measured, []) if line.startswith("| M ")]
    assert len(rows) == 2
    both = rows[0] + rows[1]
    assert "Xeon, AMX (`latency-a.json`)" in both and "EPYC, AVX2 only (`latency-b.json`)" in both
    assert {"| 2.00 |" in r for r in rows} == {True, False}
