"""device: adb command construction and the whole run with an injected command runner (no phone here)."""

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import device, schema
from pocketbert.benchmarks.cli import cli

FIXTURES = Path(__file__).parent / "fixtures"


class FakeAdb:
    """Records every argv; answers getprop and benchmark_model like a phone would."""

    def __init__(self, output: str):
        self.calls, self.output = [], output

    def __call__(self, argv):
        self.calls.append(argv)
        if "getprop" in argv:
            return 0, {"ro.product.model": "Pixel 4\n", "ro.soc.model": "SM8150\n"}.get(argv[-1], "x\n"), ""
        if argv[3] == "shell" and "benchmark_model" in argv[-1]:
            return 0, self.output, ""
        return 0, "", ""


def settings(**kw):
    return device.DeviceSettings(serial="ABC", adb="adb", threads=[4], seq_lens=[32], runs=20, warmup=3, **kw)


TENSORS = {"attention_mask": "seq_128_attention_mask", "input_ids": "seq_128_input_ids",
           "token_type_ids": "seq_128_token_type_ids"}


def test_benchmark_command_flags():
    argv = device.benchmark_command(settings(taskset="f0"), "/data/local/tmp/pocketbert/m.tflite", 4, 128, "xnnpack",
                                    TENSORS, 30522)
    assert argv[:4] == ["adb", "-s", "ABC", "shell"]
    words = shlex.split(argv[4])
    assert words[:3] == ["taskset", "f0", "/data/local/tmp/pocketbert/benchmark_model"]
    assert set(words[3:]) == {
        "--graph=/data/local/tmp/pocketbert/m.tflite", "--num_threads=4", "--use_xnnpack=true", "--num_runs=20",
        "--warmup_runs=3", "--signature_to_run_for=seq_128",
        "--input_layer=seq_128_input_ids,seq_128_attention_mask,seq_128_token_type_ids",
        "--input_layer_shape=1,128:1,128:1,128",
        "--input_layer_value_range=seq_128_input_ids,1,30521:seq_128_attention_mask,1,1:seq_128_token_type_ids,0,0"}


def test_signature_tensors_read_from_the_file(tiny_bundle):
    assert device.signature_tensors(tiny_bundle / "model.tflite", 32) == {
        "input_ids": "seq_32_input_ids", "attention_mask": "seq_32_attention_mask",
        "token_type_ids": "seq_32_token_type_ids"}


def test_gpu_and_nnapi_commands():
    s = settings(use_gpu=True, use_nnapi=True)
    assert device.delegates(s) == ["xnnpack", "gpu", "nnapi"]
    two = {"input_ids": "seq_32_input_ids", "attention_mask": "seq_32_attention_mask"}
    gpu = device.benchmark_command(s, "m.tflite", 1, 32, "gpu", two, 100)[-1]
    assert "--use_gpu=true" in gpu and "--use_xnnpack=false" in gpu and "taskset" not in gpu
    assert "token_type_ids" not in gpu and "--input_layer_shape=1,32:1,32 " in gpu  # DistilBERT: two inputs
    assert "--use_nnapi=true" in device.benchmark_command(s, "m.tflite", 1, 32, "nnapi", two, 100)[-1]


def test_run_end_to_end_with_fake_adb(tiny_bundle, tmp_path):
    fake = FakeAdb((FIXTURES / "newest_info_percentiles.txt").read_text())
    binary = tmp_path / "benchmark_model"
    binary.write_bytes(b"\x7fELF")
    data = device.run([tiny_bundle], settings(binary=binary, taskset="c0"), fake, progress=lambda m: None)
    assert data["device"]["model"] == "Pixel 4" and data["command"] == "device"
    pushes = [c for c in fake.calls if c[3] == "push"]
    assert pushes[0][-1] == "/data/local/tmp/pocketbert/benchmark_model"
    assert {Path(c[4]).name for c in pushes[1:]} == {"model.tflite", "model.int8-dynamic.tflite"}
    records = data["results"]
    assert [r["runner"] for r in records] == ["tflite:fp32", "tflite:int8-dynamic"]
    for r in records:
        assert schema.check_record(r) == [], r
        assert r["where"] == "device:ABC" and r["timed"]["p50_ms"] == pytest.approx(51.891)
        assert r["first_ms"] == pytest.approx(87.112) and "taskset c0" in r["command"]
        assert r["peak_rss_mb"] is None and "delta" in r["notes"][0]  # a delta is not reported as a peak
    assert records[1]["speedup"]["vs_tflite_plain_fp32"] == pytest.approx(1.0)  # same fake output


def test_failed_benchmark_is_a_skipped_record(tiny_bundle):
    fake = FakeAdb((FIXTURES / "failed_allocate_tensors.txt").read_text())
    data = device.run([tiny_bundle], settings(), fake, progress=lambda m: None)
    assert all("Failed to allocate tensors" in r["skipped"] for r in data["results"])


def test_missing_bucket_is_skipped_not_run(tiny_bundle):
    fake = FakeAdb((FIXTURES / "newer_peak_memory_tf24.txt").read_text())
    s = settings()
    s.seq_lens = [32, 64]
    data = device.run([tiny_bundle], s, fake, progress=lambda m: None)
    s64 = [r for r in data["results"] if r["seq_len"] == 64]
    assert s64 and all("no seq_64 signature" in r["skipped"] for r in s64)
    assert sum("benchmark_model" in c[-1] for c in fake.calls if c[3] == "shell") == 2
    assert [r["peak_rss_mb"] for r in data["results"] if r["seq_len"] == 32] == [pytest.approx(138.809)] * 2


def test_cli_without_adb_names_the_fix(tiny_bundle, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = CliRunner().invoke(cli, ["device", "--serial", "ABC", str(tiny_bundle)])
    assert result.exit_code == 3 and "no adb on PATH" in result.output and "platform-tools" in result.output


def test_cli_dry_run_prints_commands(tiny_bundle):
    result = CliRunner().invoke(cli, ["device", "--serial", "ABC", "--dry-run", "--fast", "--taskset", "f0",
                                      str(tiny_bundle)])
    assert result.exit_code == 0, result.output
    assert "adb -s ABC shell taskset f0 /data/local/tmp/pocketbert/benchmark_model" in result.output


def test_cli_bad_taskset(tiny_bundle):
    result = CliRunner().invoke(cli, ["device", "--serial", "ABC", "--taskset", "big", str(tiny_bundle)])
    assert result.exit_code == 2 and "hex CPU mask" in result.output
