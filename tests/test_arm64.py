"""TFLite artifacts compute the same on LiteRT's aarch64 build (the kernels phones run), under QEMU.

The aarch64 Python, numpy and ai-edge-litert are prepared once in the user's cache (a few minutes the
first time); later runs reuse them.  Where the machine cannot prepare them (no root for apt, not x86-64)
the tests are skipped with the reason and its fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pocketbert import debian_packages
from pocketbert.benchmarks import aarch64_env, arm64, schema
from pocketbert.converter.inputs.texts import read_texts

from .conftest import DATA
from .runtime.conftest import convert_bundle


@pytest.fixture(scope="module")
def environment():
    try:
        return aarch64_env.prepare(log=lambda message: None)
    except aarch64_env.EmulationUnavailable as exc:
        pytest.skip(f"cannot run LiteRT's aarch64 build here: {exc.problem} ({exc.fix})")


@pytest.fixture(scope="module")
def tiny_bundle(checkpoints, tmp_path_factory):
    return convert_bundle(checkpoints["bert"]["classification"], tmp_path_factory.mktemp("arm64") / "cls",
                          recipes="tflite:fp32,tflite:int8-dynamic", buckets=[16, 32], verify_samples=32)


def test_every_tflite_artifact_and_bucket_agrees_on_aarch64(environment, tiny_bundle):
    # sentences of every length: some fit bucket 16, some only 32, some are cut to fit both
    texts = read_texts(DATA / "glue" / "SST-2" / "dev.tsv")[:12]
    records = arm64.check(tiny_bundle, texts, ["max"], environment, log=lambda message: None)
    assert {(r["recipe"], r["bucket"]) for r in records} == {
        (recipe, bucket) for recipe in ("tflite:fp32", "tflite:int8-dynamic") for bucket in (16, 32)}
    for r in records:
        where = f"{r['recipe']} bucket {r['bucket']}"
        assert r["guest_machine"] == "aarch64" and r["where"] == "aarch64-emulated", where
        assert {"asimd", "asimddp", "i8mm", "sve", "sve2"} <= set(r["cpu_features"]), r["cpu_features"]
        # an emulator whose SMOPA is wrong runs max without SME, and the record says why
        assert (r["qemu_cpu"], r["note"]) in (("max", ""), ("max,sme=off", arm64.SME_OFF)), where
        assert ("sme" in r["cpu_features"]) == (r["qemu_cpu"] == "max"), r["cpu_features"]
        if r["recipe"] == "tflite:fp32":
            assert r["max_abs"] <= 1e-4 * max(1.0, r["max_abs_logit"]), f"{where}: {r}"
        else:
            assert r["top1_agreement"] == 1.0, f"{where}: {r}"
        assert r["passed"], where


def test_smopa_probe_decides_whether_max_runs_with_sme(environment):
    assert environment.smopa("max,sme=off") == "absent" and environment.smopa("cortex-a53") == "absent"
    verdict = environment.smopa("max")
    assert verdict in ("ok", "wrong")
    model, note = arm64.emulated_model(arm64.CPUS["max"], environment)
    assert (model, note) == (("max,sme=off", arm64.SME_OFF) if verdict == "wrong" else ("max", ""))
    # the other CPUs have no SME to turn off
    assert arm64.emulated_model(arm64.CPUS["cortex-a53"], environment) == ("cortex-a53", "")


def test_the_c_check_of_int8_instructions_judges_smopa_as_the_probe_does(environment, tmp_path):
    """pocketbert/benchmarks/arm/int8_ops.c, the evidence docs/android.md cites, and the worker's probe agree."""
    compiler = _cross_compiler()
    binary = tmp_path / "int8_ops"
    source = Path(arm64.__file__).with_name("arm") / "int8_ops.c"
    subprocess.run([compiler, "-O1", "-march=armv8.6-a+sve+i8mm", "-static", "-o", str(binary), str(source)],
                   check=True, capture_output=True)
    without_sme = subprocess.run([environment.qemu, "-cpu", "max,sme=off", str(binary)], capture_output=True, text=True)
    assert without_sme.returncode == 0, without_sme.stdout  # SDOT and SMMLA are right on any QEMU here
    assert "SVE SMMLA (i8mm)                   ok" in without_sme.stdout, without_sme.stdout
    with_sme = subprocess.run([environment.qemu, "-cpu", "max", str(binary)], capture_output=True, text=True)
    smopa = next(line for line in with_sme.stdout.splitlines() if line.startswith("SME SMOPA"))
    assert ("WRONG" in smopa) == (environment.smopa("max") == "wrong"), with_sme.stdout


def _cross_compiler() -> str:
    """Debian's aarch64 cross gcc, installed with apt-get when missing and we are root (as QEMU is); otherwise a
    failure with the command that installs it, not a skip."""
    compiler, failed = debian_packages.ensure_command("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu",
                                                      log=lambda *_: None)
    assert not failed, f"gcc-aarch64-linux-gnu could not be installed: {failed}"
    assert compiler, "no aarch64 cross compiler: as root, apt-get install -y gcc-aarch64-linux-gnu"
    return compiler


def test_table_names_the_cpu_it_ran_as_and_why():
    figures = {"rows": 2, "top1_agreement": 1.0, "min_cosine": 1.0, "max_abs": 0.0, "max_abs_logit": 1.0,
               "passed": True, "model": "cls", "recipe": "tflite:int8-dynamic", "bucket": 16, "cpu_features": []}
    text = arm64.table([{**figures, "cpu": "max", "qemu_cpu": "max,sme=off", "note": arm64.SME_OFF},
                        {**figures, "cpu": "cortex-a53", "qemu_cpu": "cortex-a53", "note": ""},
                        {**figures, "cpu": "max-nosve"}])  # results written before qemu_cpu was recorded
    rows = [line.split(" | ")[3] for line in text.splitlines() if line.startswith("| cls |")]
    assert rows == ["max (-cpu max,sme=off)", "cortex-a53", "max-nosve"]
    assert text.splitlines()[-1] == f"max (-cpu max,sme=off): {arm64.SME_OFF}."


def test_arm64_command_writes_results_and_the_report_shows_parity(environment, tiny_bundle, tmp_path):
    out = tmp_path / "results" / "arm64.json"
    done = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "arm64", str(tiny_bundle), "--cpus", "cortex-a53",
                           "--samples", "4", "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    data = schema.read(out)
    assert data["command"] == "arm64" and data["device"]["kind"] == "aarch64-emulated"
    assert data["device"]["versions"]["ai-edge-litert"] == aarch64_env.pinned_versions()["ai-edge-litert"]
    assert len(data["results"]) == 4 and all(r["passed"] and r["cpu"] == "cortex-a53" for r in data["results"])
    assert all("asimddp" not in r["cpu_features"] for r in data["results"])  # the no-dot-product int8 path
    assert not any("ms" in key for r in data["results"] for key in r)  # emulated time is never reported
    report = tmp_path / "REPORT.md"
    built = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "report", "--results", str(out.parent), "--out",
                            str(report)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    text = report.read_text()
    assert "## LiteRT on aarch64 (emulated)" in text
    rows = [line for line in text.splitlines() if line.startswith("| cls | tflite:")]
    assert len(rows) == 4 and all(line.endswith("| yes |") for line in rows), text
    json.dumps(data)


def test_unknown_cpu_is_a_usage_error(tiny_bundle):
    done = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "arm64", str(tiny_bundle), "--cpus", "pentium"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "unknown ARM CPU model(s) pentium" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_emulator_is_a_message_with_the_fix(tiny_bundle, tmp_path):
    """No qemu-aarch64-static and no apt-get to install it: the command names the fix, no traceback."""
    import os

    env = {**os.environ, "PATH": str(tmp_path), "POCKETBERT_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "arm64", str(tiny_bundle)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "qemu-aarch64-static not found" in done.stderr and "apt-get install -y qemu-user-static" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "cache").exists()
