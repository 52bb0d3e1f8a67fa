"""device --apk: the demo APK's page in the System WebView, against a stand-in adb (an executable script; no phone).

The stand-in logs every argv, answers getprop, install and am start as a phone does, and serves the page's
files/measure.json from ``page-TASK.json`` once the app was started for TASK and read ``ready_after`` times
(before that, what ``exec-out run-as … cat`` prints for a missing file)."""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import adb, device, device_webview, report, schema
from pocketbert.benchmarks.cli import cli

FIXTURES = Path(__file__).parent / "fixtures"
SERIAL = "R58N"
PKG = "pocketbert.webview"

STAND_IN = r"""#!/bin/sh
dir='{dir}'
printf '%s\t' "$0" "$@" >> "$dir/calls.log"; printf '\n' >> "$dir/calls.log"
[ "$1" = "-s" ] && shift 2
case "$1 $2" in
  "shell getprop")
    case "$3" in
      ro.product.model) echo "Pixel 7" ;; ro.soc.model) echo "Tensor G2" ;;
      ro.build.version.release) echo "14" ;; *) echo "arm64-v8a" ;;
    esac ;;
  "install -r") echo "Performing Streamed Install"; echo "Success" ;;
  "shell am")
    if [ "$3" = "start" ]; then
      while [ $# -gt 0 ]; do [ "$1" = "task" ] && echo "$2" > "$dir/task"; shift; done
      echo "Starting: Intent {{ cmp=pocketbert.webview/.MainActivity (has extras) }}"; echo "Status: ok"
    fi ;;
  "shell run-as") rm -f "$dir/reads" ;;
  "exec-out run-as")
    echo x >> "$dir/reads"
    page="$dir/page-$(cat "$dir/task").json"
    if [ "$(wc -l < "$dir/reads")" -ge {ready_after} ] && [ -f "$page" ]; then cat "$page"
    else echo "cat: files/measure.json: No such file or directory"; fi ;;
  *)
    case "$*" in *benchmark_model*) cat '{native}' ;; esac ;;
esac
exit 0
"""


def stand_in_adb(tmp_path: Path, ready_after: int = 2) -> Path:
    """The stand-in adb in ``tmp_path/bin``; its argv log is ``tmp_path/calls.log``."""
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "adb"
    script.write_text(STAND_IN.format(dir=tmp_path, ready_after=ready_after,
                                      native=FIXTURES / "newest_info_percentiles.txt"))
    script.chmod(0o755)
    return script


def calls(tmp_path: Path) -> list[list[str]]:
    return [line.split("\t")[:-1] for line in (tmp_path / "calls.log").read_text().splitlines()]


def page_record(model: str, label: str, seq: int, p50: float) -> dict:
    """One record as web_demo/src/measure.js latencyRecord writes it."""
    timed = {"runs": 5, "mean_ms": p50 + 0.4, "p50_ms": p50, "p90_ms": p50 + 1.0, "p99_ms": p50 + 2.0, "std_ms": 0.7,
             "min_ms": p50 - 0.5, "max_ms": p50 + 2.5}
    return {"model": model, "model_label": label, "random_weights": False, "bundle": f"bundles/{model}",
            "variant": "bundle", "runner": "tflite:int4-dynamic", "opts": "ffn-fold", "backend": "tflite",
            "precision": "int4-dynamic", "threads": 1, "seq_len": seq, "batch": 1, "where": "browser",
            "init_ms": 80.5, "first_ms": 40.25, "warmup": {"runs": 1, "mean_ms": p50 + 3}, "timed": timed,
            "peak_rss_mb": None, "size_bytes": 10_000_000, "macs": None, "floor": None, "skipped": None,
            "notes": ["measured in a web page: LiteRT.js, WebAssembly, single-threaded, in a Web Worker, model "
                      "time only (tokenization excluded)"]}


def page_file(records: list[dict]) -> dict:
    """The page's results file (measure.js resultsFile) as the app's WebView writes it."""
    return {"schema": schema.SCHEMA, "command": "browser", "created": "2026-12-02T10:00:00+00:00", "fast": False,
            "machine": None, "device": {"kind": "browser", "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 7; "
                                        "wv) Chrome/131.0.6778.39 Mobile Safari/537.36", "hardware_concurrency": 8,
                                        "platform": "Android",
                                        "runtime": "LiteRT.js (@litertjs/core), WebAssembly CPU (XNNPACK), 1 thread"},
            "settings": None, "results": records}


def serve(tmp_path: Path, task: str, page: dict) -> None:
    (tmp_path / f"page-{task}.json").write_text(json.dumps(page))


def serve_both(tmp_path: Path) -> None:
    serve(tmp_path, "ner", page_file([page_record("ner-phone", "ner-phone (token-classification)", s, p)
                                      for s, p in ((32, 12.5), (128, 48.0))]))
    serve(tmp_path, "classification", page_file([page_record("sst2-phone", "sst2-phone (sequence-classification)",
                                                             128, 30.0)]))


def apk_settings(tmp_path: Path, script: Path, **kw) -> device.DeviceSettings:
    apk = tmp_path / "pocketbert-demo.apk"
    apk.write_bytes(b"PK\x03\x04")
    return device.DeviceSettings(serial=SERIAL, adb=str(script), runs=5, warmup=1, apk=apk, apk_poll=0.01, **kw)


def expected_task_calls(script: Path, task: str, reads: int) -> list[list[str]]:
    phone = [str(script), "-s", SERIAL]
    return [[*phone, "shell", "am", "force-stop", PKG],
            [*phone, "shell", "run-as", PKG, "rm", "-f", "files/measure.json"],
            [*phone, "shell", "am", "start", "-W", "-n", f"{PKG}/.MainActivity", "--ez", "measure", "true",
             "--es", "task", task, "--ei", "warmup", "1", "--ei", "runs", "5"]] + \
        [[*phone, "exec-out", "run-as", PKG, "cat", "files/measure.json"]] * reads


def test_apk_command_sequence_and_rows(tmp_path):
    script = stand_in_adb(tmp_path, ready_after=2)  # absent on the first read, there on the second
    serve_both(tmp_path)
    settings = apk_settings(tmp_path, script)
    data = device.run([], settings, adb.run_process, progress=lambda m: None)
    phone = [str(script), "-s", SERIAL]
    assert calls(tmp_path) == [
        *[[*phone, "shell", "getprop", p] for p in ("ro.product.model", "ro.soc.model", "ro.build.version.release",
                                                    "ro.product.cpu.abi")],
        [*phone, "install", "-r", str(settings.apk)],
        *expected_task_calls(script, "ner", 2), *expected_task_calls(script, "classification", 2),
        [*phone, "shell", "am", "force-stop", PKG]]
    assert data["command"] == "device" and data["device"] == {
        "serial": SERIAL, "model": "Pixel 7", "soc": "Tensor G2", "android": "14", "abi": "arm64-v8a"}
    rows = data["results"]
    assert [(r["model"], r["seq_len"], r["timed"]["p50_ms"]) for r in rows] == [
        ("ner-phone", 32, 12.5), ("ner-phone", 128, 48.0), ("sst2-phone", 128, 30.0)]
    for r in rows:
        assert schema.check_record(r) == [], r
        assert r["where"] == "android-webview" and r["runner"] == "webview-litertjs-wasm:int4-dynamic"
        assert r["page_runner"] == "tflite:int4-dynamic" and r["threads"] == 1 and r["backend"] == "tflite"
        assert r["webview"]["apk"] == "pocketbert-demo.apk" and "Chrome/131" in r["webview"]["user_agent"]
        assert "System WebView" in r["notes"][-1] and r["speedup"] == {}
    assert [r["webview"]["task"] for r in rows] == ["ner", "ner", "classification"]


def test_cli_native_and_webview_rows_side_by_side_in_the_report(tiny_bundle, tmp_path, monkeypatch):
    script = stand_in_adb(tmp_path, ready_after=1)
    serve_both(tmp_path)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")  # the stand-in is `adb`
    apk = tmp_path / "pocketbert-demo.apk"
    apk.write_bytes(b"PK\x03\x04")
    results = tmp_path / "results"
    out = results / f"device-{SERIAL}.json"
    done = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--fast", "--apk", str(apk), "--apk-task", "ner",
                                    "--out", str(out), str(tiny_bundle)])
    assert done.exit_code == 0, done.output
    ran = [" ".join(c[3:5]) for c in calls(tmp_path)]
    assert ran.index("install -r") > max(i for i, c in enumerate(calls(tmp_path)) if "benchmark_model" in c[-1])
    assert ran.count("exec-out run-as") == 1 and "classification" not in str(calls(tmp_path))
    data = schema.read(out)
    assert [(r["where"], r["runner"]) for r in data["results"]] == [
        (f"device:{SERIAL}", "tflite:fp32"), (f"device:{SERIAL}", "tflite:int8-dynamic"),
        ("android-webview", "webview-litertjs-wasm:int4-dynamic"),
        ("android-webview", "webview-litertjs-wasm:int4-dynamic")]
    text = report.build(results, tmp_path / "REPORT.md").read_text()
    section = text.split("## On the phone (benchmark_model; the demo APK's System WebView)")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[1:5] for row in rows] == [  # one table, ordered by model: ner-phone < tiny BERT
        ["webview-litertjs-wasm:int4-dynamic +ffn-fold", "tflite", "1", "32"],
        ["webview-litertjs-wasm:int4-dynamic +ffn-fold", "tflite", "1", "128"],
        ["tflite:fp32", "tflite/xnnpack", "1", "32"], ["tflite:int8-dynamic", "tflite/xnnpack", "1", "32"]]
    assert "| ner-phone (token-classification) | webview-litertjs-wasm:int4-dynamic +ffn-fold | tflite | 1 | 128 | 1 " \
           "| 48.00 | 49.00 | 50.00 | 0.70 | 80.5 | 40.2 |" in section
    assert "System WebView (LiteRT.js, WebAssembly, 1 thread)" in section


def test_page_error_names_the_pages_message(tmp_path):
    script = stand_in_adb(tmp_path, ready_after=1)
    serve(tmp_path, "ner", {"error": "no NER bundle in this build"})
    apk = tmp_path / "pocketbert-demo.apk"
    apk.write_bytes(b"PK\x03\x04")
    done = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--adb", str(script), "--apk", str(apk),
                                    "--out", str(tmp_path / "device.json")])
    assert done.exit_code == 3, done.output
    assert "the demo page could not measure task ner: no NER bundle in this build" in done.output
    assert "android_demo/build_apk.sh" in done.output and not (tmp_path / "device.json").exists()
    assert [c[3:5] for c in calls(tmp_path)][-1] == ["exec-out", "run-as"]  # stopped at the first task


def test_timeout_names_the_problem_and_the_fix(tmp_path):
    script = stand_in_adb(tmp_path)  # serves no page: the file never appears
    apk = tmp_path / "pocketbert-demo.apk"
    apk.write_bytes(b"PK\x03\x04")
    done = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--adb", str(script), "--apk", str(apk),
                                    "--apk-task", "classification", "--apk-timeout", "0.3"])
    assert done.exit_code == 3, done.output
    assert "the demo page wrote no files/measure.json for task classification within 0.3 s" in done.output
    assert "No such file or directory" in done.output  # the last read
    assert "screen on" in done.output and "--apk-timeout" in done.output
    assert [" ".join(c[3:5]) for c in calls(tmp_path)].count("exec-out run-as") == 2  # at the start and the deadline


def test_polls_until_the_file_parses_then_stops(tmp_path):
    script = stand_in_adb(tmp_path, ready_after=4)
    serve(tmp_path, "ner", page_file([page_record("ner-phone", "ner-phone (token-classification)", 32, 12.5)]))
    settings = apk_settings(tmp_path, script, apk_tasks=["ner"])
    rows = device.run([], settings, adb.run_process, progress=lambda m: None)["results"]
    assert len(rows) == 1 and calls(tmp_path)[5:-1] == expected_task_calls(script, "ner", 4)  # after getprop, install


def test_missing_apk_is_refused_before_any_adb_call(tmp_path):
    script = stand_in_adb(tmp_path)
    done = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--adb", str(script), "--apk",
                                    str(tmp_path / "missing.apk")])
    assert done.exit_code == 3 and "missing.apk does not exist" in done.output and "build_apk.sh" in done.output
    assert not (tmp_path / "calls.log").exists()


def test_run_as_refused_names_the_debuggable_build():
    def runner(argv):
        if "run-as" in argv:
            return 1, "", "run-as: package not debuggable: pocketbert.webview\n"
        return 0, "Success\n" if "install" in argv else "", ""

    apk_run = device_webview.ApkRun(adb=["adb", "-s", SERIAL], apk=FIXTURES / "SOURCES.md", tasks=["ner"], warmup=1,
                                    runs=5)
    with pytest.raises(adb.DeviceError) as refused:
        device_webview.measure(apk_run, runner, progress=lambda m: None)
    assert "package not debuggable" in refused.value.problem and "debuggable APK" in refused.value.fix


def test_cli_usage_errors(tmp_path):
    nothing = CliRunner().invoke(cli, ["device", "--serial", SERIAL])
    assert nothing.exit_code == 2 and "nothing to measure" in nothing.output
    unknown = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--apk", "x.apk", "--apk-task", "ner,qa"])
    assert unknown.exit_code == 2 and "no task qa" in unknown.output and "ner,classification" in unknown.output
    alone = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--apk-task", "ner", str(tmp_path)])
    assert alone.exit_code == 2 and "--apk-task without --apk" in alone.output


def test_cli_dry_run_prints_the_apk_commands(tmp_path):
    apk = tmp_path / "pocketbert-demo.apk"
    apk.write_bytes(b"PK\x03\x04")
    done = CliRunner().invoke(cli, ["device", "--serial", SERIAL, "--dry-run", "--fast", "--apk", str(apk)])
    assert done.exit_code == 0, done.output
    assert f"adb -s {SERIAL} install -r {apk}" in done.output
    assert (f"adb -s {SERIAL} shell am start -W -n {PKG}/.MainActivity --ez measure true --es task classification "
            "--ei warmup 1 --ei runs 5") in done.output
    assert done.output.count(f"adb -s {SERIAL} exec-out run-as {PKG} cat files/measure.json") == 2
