"""``pocketbert-bench device --apk``: the demo APK's page timed in the phone's System WebView, over adb.

The APK (android_demo/build_apk.sh) is a WebView running web_demo's page with LiteRT.js (WebAssembly, one
thread) on the bundles packed inside, one for NER and one for classification. Its measure protocol:

* ``am start -W -n pocketbert.webview/.MainActivity --ez measure true --es task TASK --ei warmup N
  --ei runs N`` makes the page time every sequence bucket of that task's bundle;
* the app then writes the page's JSON to its files folder, ``files/measure.json`` (written whole, then
  renamed: it appears complete): the page's results file (web_demo/src/measure.js ``resultsFile``, command
  ``browser``, one latency record per bucket), or ``{"error": message}`` when the page could not measure.

Per task: stop the app, remove the old ``files/measure.json`` (``run-as``: the APK is debuggable), start the
measure intent, and read the file with ``exec-out run-as … cat`` every ``poll`` seconds until it parses, for
at most ``timeout`` seconds. Each page record becomes a device row with ``where: android-webview`` and the
runner ``webview-litertjs-wasm:<precision>`` (``tflite:int4-dynamic`` in the page), so the report shows it
beside benchmark_model's native rows of the same phone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import schema
from .adb import ADB_FIX, DeviceError, Runner, check, last_line

APK_TASKS = ("ner", "classification")  # the slots of the demo APK, in the order it measures them
PACKAGE = "pocketbert.webview"
ACTIVITY = f"{PACKAGE}/.MainActivity"
MEASURE_FILE = "files/measure.json"
WHERE = "android-webview"
RUNNER = "webview-litertjs-wasm"  # LiteRT.js, WebAssembly, in the phone's System WebView
BUILD_FIX = "build the debuggable APK with android_demo/build_apk.sh (it writes pocketbert-demo.apk) and pass its path"
RUN_AS_FIX = (f"install the debuggable APK that android_demo/build_apk.sh builds: `run-as {PACKAGE}` needs a debug "
              "build of that package")


@dataclass
class ApkRun:
    adb: list[str]  # adb -s SERIAL
    apk: Path
    tasks: list[str]
    warmup: int
    runs: int
    timeout: float = 600.0
    poll: float = 2.0


def check_apk(apk: Path) -> None:
    if not Path(apk).is_file():
        raise DeviceError(f"APK {apk} does not exist", BUILD_FIX)


def start_command(run: ApkRun, task: str) -> list[str]:
    return [*run.adb, "shell", "am", "start", "-W", "-n", ACTIVITY, "--ez", "measure", "true", "--es", "task", task,
            "--ei", "warmup", str(run.warmup), "--ei", "runs", str(run.runs)]


def read_command(run: ApkRun) -> list[str]:
    return [*run.adb, "exec-out", "run-as", PACKAGE, "cat", MEASURE_FILE]


def measure(run: ApkRun, runner: Runner, progress: Callable[[str], None] = print, dry_run: bool = False,
            clock: Callable[[], float] = time.monotonic) -> list[dict]:
    """Install the APK, run the page's measure for each task, and return its records as device rows.

    ``dry_run``: the runner prints instead of running, so ``files/measure.json`` is asked for once, not awaited.
    """
    check_apk(run.apk)
    out = check(runner, [*run.adb, "install", "-r", str(run.apk)], f"installing {run.apk}",
                "if adb says INSTALL_FAILED_UPDATE_INCOMPATIBLE, a copy signed with another key is installed: "
                f"`adb uninstall {PACKAGE}`, then run again; else check `adb devices` lists the phone")
    if "Failure" in out:
        raise DeviceError(f"installing {run.apk} failed: {last_line('', out)}",
                          f"`adb uninstall {PACKAGE}` and run again, or rebuild the APK (android_demo/build_apk.sh)")
    rows = []
    for task in run.tasks:
        check(runner, [*run.adb, "shell", "am", "force-stop", PACKAGE], f"stopping {PACKAGE}")
        check(runner, [*run.adb, "shell", "run-as", PACKAGE, "rm", "-f", MEASURE_FILE],
              f"removing the old {MEASURE_FILE}", RUN_AS_FIX)
        started = check(runner, start_command(run, task), f"starting {ACTIVITY}")
        if any(line.startswith("Error") for line in started.splitlines()):
            raise DeviceError(f"starting {ACTIVITY} failed: {last_line('', started)}", BUILD_FIX + ", then run again")
        page = await_page(run, task, runner, dry_run=dry_run, clock=clock)
        if page is None:
            progress(f"  webview {task}: dry run, {MEASURE_FILE} not read")
            continue
        for row in page_rows(page, task, run.apk):
            rows.append(row)
            progress(f"  webview {task} {row['model']} {row['runner']} s{row['seq_len']}: "
                     + (row["skipped"] or f"p50 {schema.typical_ms(row):.2f} ms"))
    check(runner, [*run.adb, "shell", "am", "force-stop", PACKAGE], f"stopping {PACKAGE}")  # not left running
    return rows


def await_page(run: ApkRun, task: str, runner: Runner, dry_run: bool = False,
               clock: Callable[[], float] = time.monotonic) -> dict | None:
    """The page's JSON once ``files/measure.json`` parses; DeviceError after ``run.timeout`` seconds."""
    deadline = clock() + run.timeout
    while True:
        code, out, err = runner(read_command(run))
        if dry_run:
            return None
        try:
            page = json.loads(out)
        except ValueError:
            page = None
        if isinstance(page, dict):
            return page
        said = last_line(out, err)
        if page is not None:
            raise DeviceError(f"{MEASURE_FILE} of task {task} is not the page's JSON: {said[:200]}", BUILD_FIX)
        if said.startswith("run-as:"):
            raise DeviceError(f"reading {MEASURE_FILE} failed: {said}", RUN_AS_FIX)
        if code != 0 and "No such file" not in said:
            raise DeviceError(f"reading {MEASURE_FILE} failed (exit {code}): {said}", ADB_FIX)
        left = deadline - clock()
        if left <= 0:
            raise DeviceError(
                f"the demo page wrote no {MEASURE_FILE} for task {task} within {run.timeout:g} s (last read: {said})",
                "keep the phone unlocked with the screen on while it measures (a page in the background is "
                "throttled); if it is still measuring (slow phone, many --runs), raise --apk-timeout; "
                "`adb logcat` shows the page's console errors")
        time.sleep(min(run.poll, left))


def page_rows(page: dict, task: str, apk: Path) -> list[dict]:
    """The page's records as device rows: ``where`` and ``runner`` say WebView; the page's runner is kept."""
    if "error" in page:
        raise DeviceError(f"the demo page could not measure task {task}: {page['error']}",
                          "the message is the page's own; check the APK packs a bundle for the task "
                          "(android_demo/build_apk.sh), and `adb logcat` for the page's console errors")
    results = page.get("results")
    if page.get("command") != "browser" or not isinstance(results, list):
        raise DeviceError(f"{MEASURE_FILE} of task {task} is not the page's results file "
                          f"(command {page.get('command')!r}, schema {page.get('schema')!r})",
                          "rebuild the APK from this checkout (android_demo/build_apk.sh), so page and command agree")
    if not results:
        raise DeviceError(f"the demo page measured no bucket for task {task}",
                          "check the APK packs a bundle for the task (android_demo/build_apk.sh)")
    device = page.get("device") or {}
    webview = {"apk": Path(apk).name, "task": task, "user_agent": device.get("user_agent"),
               "runtime": device.get("runtime"), "hardware_concurrency": device.get("hardware_concurrency"),
               "page_created": page.get("created")}
    rows = []
    for record in results:
        problems = schema.check_record(record) if isinstance(record, dict) else ["not a JSON object"]
        if problems:
            raise DeviceError(f"a record of the demo page (task {task}) is malformed: {', '.join(problems)}",
                              "rebuild the APK from this checkout (android_demo/build_apk.sh), so page and "
                              "command agree")
        page_runner = record["runner"]
        rows.append({**record, "runner": f"{RUNNER}:{page_runner.split(':', 1)[-1]}", "page_runner": page_runner,
                     "where": WHERE, "webview": webview,
                     "notes": [*record.get("notes", []), f"the demo APK's page in the System WebView "
                               f"({webview['user_agent'] or 'user agent not known'})"]})
    return rows
