"""The benchmark_model parser on verbatim output of several TFLite versions (sources: fixtures/SOURCES.md)."""

from pathlib import Path

import pytest

from pocketbert.benchmarks.benchmark_model_output import BenchmarkOutputError, parse

FIXTURES = Path(__file__).parent / "fixtures"


def read(name):
    return (FIXTURES / name).read_text()


def test_older_no_stats_with_op_profiling():
    r = parse(read("older_no_stats_op_profiling.txt"))
    assert r["format"] == "older"
    assert r["init_ms"] == pytest.approx(18.764) and r["first_ms"] is None
    assert r["warmup"] == {"runs": 2, "mean_ms": pytest.approx(395.037)}
    t = r["timed"]
    # the statistics line of the timed runs, not the op profiler's "Timings (microseconds)" totals
    assert (t["runs"], t["mean_ms"], t["std_ms"], t["min_ms"], t["max_ms"]) == (
        50, pytest.approx(394.183), pytest.approx(4.373), pytest.approx(389.982), pytest.approx(417.669))
    assert t["p50_ms"] is None and r["timed_source"] == "statistics line" and r["memory_mb"] is None


def test_older_inference_falls_back_to_profiler_totals():
    r = parse(read("older_inference_op_profiling_readme.txt"))
    assert (r["format"], r["init_ms"], r["warmup"]["mean_ms"]) == ("older", pytest.approx(38.467),
                                                                   pytest.approx(83.235))
    assert r["timed"]["mean_ms"] == pytest.approx(79.7609)
    assert r["timed_source"] == "op profiler totals" and r["timed"]["std_ms"] == pytest.approx(1.929)


def test_newer_with_peak_memory():
    r = parse(read("newer_peak_memory_tf24.txt"))
    assert r["format"] == "newer"
    assert (r["init_ms"], r["first_ms"], r["warmup"]["mean_ms"], r["timed"]["mean_ms"]) == (
        pytest.approx(16.242), pytest.approx(360.262), pytest.approx(304.586), pytest.approx(249.684))
    assert r["memory_mb"] == {"kind": "peak", "init": pytest.approx(4.92969), "overall": pytest.approx(138.809)}
    assert r["timed"]["runs"] == 50 and r["timed"]["std_ms"] == pytest.approx(1.442)


def test_newer_memory_delta_is_not_called_a_peak():
    r = parse(read("newer_memory_delta_nightly.txt"))
    assert r["memory_mb"]["kind"] == "delta from tool start" and r["memory_mb"]["overall"] == pytest.approx(140.508)


def test_newest_info_prefix_and_percentiles():
    r = parse(read("newest_info_percentiles.txt"))
    t = r["timed"]
    assert (t["runs"], t["p50_ms"], t["p5_ms"], t["p95_ms"]) == (1000, pytest.approx(51.891), pytest.approx(49.62),
                                                                  pytest.approx(68.628))
    assert t["p5_ms"] <= t["p50_ms"] <= t["p95_ms"] <= t["max_ms"]
    assert r["warmup"]["runs"] == 9 and r["first_ms"] == pytest.approx(87.112)
    assert r["model_file_mb"] == pytest.approx(24.6229)
    assert t["p90_ms"] is None and t["p99_ms"] is None  # not printed, never invented


def test_failed_run_names_the_error():
    with pytest.raises(BenchmarkOutputError, match="Failed to allocate tensors"):
        parse(read("failed_allocate_tensors.txt"))


def test_not_benchmark_model_output():
    with pytest.raises(BenchmarkOutputError, match="no timing summary"):
        parse("hello\nworld\n")
