"""``pocketbert-bench device``: TFLite artifacts on an Android phone with ``benchmark_model`` over adb.

For each bundle's .tflite artifacts: push the file (and the benchmark binary, when given) to
``/data/local/tmp/pocketbert``, run ``benchmark_model`` once per thread count × sequence bucket ×
delegate (XNNPACK CPU always; GPU and NNAPI when asked), optionally pinned to the big cores with
``taskset MASK``, and parse its output (:mod:`benchmarks.benchmark_model_output`) into the desktop
latency schema (``where: device:<serial>``).

Flags passed (TensorFlow's tools/benchmark README and benchmark_model's own flag list):
``--graph``, ``--num_threads``, ``--use_xnnpack``, ``--use_gpu``, ``--use_nnapi``, ``--num_runs``,
``--warmup_runs``, ``--signature_to_run_for=seq_<n>`` (our .tflite files hold one signature per bucket;
benchmark_model refuses a multi-signature file without it), and ``--input_layer`` /
``--input_layer_shape`` / ``--input_layer_value_range`` naming the signature's input tensors (token ids
inside the vocabulary, attention mask 1, token types 0: benchmark_model's random ids past the vocabulary
would make the embedding GATHER fail).

With ``apk`` set, the demo APK's page is measured too (:mod:`benchmarks.device_webview`): LiteRT.js,
WebAssembly, in the phone's System WebView, its rows beside benchmark_model's.

Every adb call goes through a ``runner(argv) -> (returncode, stdout, stderr)`` (:mod:`benchmarks.adb`); the
default runs the process, tests pass a fake one (no phone here).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import device_webview, schema
from .adb import DeviceError, Runner, run_process
from .adb import check as _check
from .benchmark_model_output import BenchmarkOutputError, parse
from .models import describe_bundle

REMOTE_DIR = "/data/local/tmp/pocketbert"


@dataclass
class DeviceSettings:
    serial: str
    binary: Path | None = None  # local benchmark_model to push; None: already at REMOTE_DIR/benchmark_model
    adb: str = "adb"
    threads: list[int] = field(default_factory=lambda: [1, 4])
    seq_lens: list[int] = field(default_factory=lambda: [128])
    runs: int = 50
    warmup: int = 10
    taskset: str | None = None  # hex CPU mask, e.g. f0 for the big cores of a 4+4 SoC
    use_gpu: bool = False
    use_nnapi: bool = False
    fast: bool = False
    apk: Path | None = None  # the demo APK (android_demo/build_apk.sh): its page measured in the System WebView
    apk_tasks: list[str] = field(default_factory=lambda: list(device_webview.APK_TASKS))
    apk_timeout: float = 600.0  # seconds one task's page may take to write files/measure.json
    apk_poll: float = 2.0  # seconds between two reads of files/measure.json


def delegates(settings: DeviceSettings) -> list[str]:
    return ["xnnpack"] + (["gpu"] if settings.use_gpu else []) + (["nnapi"] if settings.use_nnapi else [])


def signature_tensors(path: Path, seq: int) -> dict[str, str]:
    """Signature input name -> the subgraph's tensor name (``seq_128_input_ids``), read from the file:
    benchmark_model's ``--input_layer*`` flags name tensors, not signature inputs."""
    try:
        from ai_edge_litert.interpreter import Interpreter

        runner = Interpreter(model_path=str(path)).get_signature_runner(f"seq_{seq}")
        return {name: details["name"] for name, details in runner.get_input_details().items()}
    except Exception:  # no LiteRT here, or no such signature: litert-torch's naming
        return {name: f"seq_{seq}_{name}" for name in ("input_ids", "attention_mask", "token_type_ids")}


def benchmark_command(settings: DeviceSettings, remote_model: str, threads: int, seq: int, delegate: str,
                      tensors: dict[str, str], vocab: int) -> list[str]:
    """The ``adb shell`` argv of one benchmark_model run (one shell string, quoted for the device's sh).

    ``tensors``: the model's inputs (signature name -> tensor name).  Their shapes and value ranges are
    given explicitly: token ids inside the vocabulary, mask 1, token types 0.
    """
    ranges = {"input_ids": (1, vocab - 1), "attention_mask": (1, 1), "token_type_ids": (0, 0)}
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tensors]
    flags = [f"--graph={remote_model}", f"--num_threads={threads}",
             f"--use_xnnpack={'true' if delegate == 'xnnpack' else 'false'}",
             f"--num_runs={settings.runs}", f"--warmup_runs={settings.warmup}",
             f"--signature_to_run_for=seq_{seq}",
             "--input_layer=" + ",".join(tensors[n] for n in names),
             "--input_layer_shape=" + ":".join(f"1,{seq}" for _ in names),
             "--input_layer_value_range=" + ":".join(f"{tensors[n]},{ranges[n][0]},{ranges[n][1]}" for n in names)]
    if delegate == "gpu":
        flags.append("--use_gpu=true")
    if delegate == "nnapi":
        flags.append("--use_nnapi=true")
    command = [f"{REMOTE_DIR}/benchmark_model", *flags]
    if settings.taskset:
        command = ["taskset", settings.taskset, *command]
    return [settings.adb, "-s", settings.serial, "shell", " ".join(shlex.quote(c) for c in command)]


def device_info(settings: DeviceSettings, runner: Runner) -> dict:
    info = {"serial": settings.serial}
    for key, prop in (("model", "ro.product.model"), ("soc", "ro.soc.model"), ("android", "ro.build.version.release"),
                      ("abi", "ro.product.cpu.abi")):
        info[key] = _check(runner, [settings.adb, "-s", settings.serial, "shell", "getprop", prop],
                           f"reading {prop}").strip() or None
    return info


def run(bundle_paths: list[Path], settings: DeviceSettings, runner: Runner = run_process,
        progress: Callable[[str], None] = print, dry_run: bool = False) -> dict:
    """benchmark_model on each bundle's .tflite files, then (``settings.apk``) the demo APK's page.

    ``dry_run``: the runner prints the commands instead of running them (the page's file is not awaited).
    """
    if settings.apk:
        device_webview.check_apk(settings.apk)
    data = schema.new_file("device", fast=settings.fast, machine=None, device=device_info(settings, runner),
                           settings={k: str(v) if isinstance(v, Path) else v for k, v in settings.__dict__.items()})
    if bundle_paths:
        _prepare(settings, runner)
    for path in bundle_paths:
        data["results"] += _bundle_records(path, settings, runner, progress)
    if settings.apk:
        apk_run = device_webview.ApkRun(adb=[settings.adb, "-s", settings.serial], apk=Path(settings.apk),
                                        tasks=settings.apk_tasks, warmup=settings.warmup, runs=settings.runs,
                                        timeout=settings.apk_timeout, poll=settings.apk_poll)
        data["results"] += device_webview.measure(apk_run, runner, progress, dry_run=dry_run)
    from .latency import add_ratios

    add_ratios(data["results"])
    return data


def _prepare(settings: DeviceSettings, runner: Runner) -> None:
    """The folder the models go to, and benchmark_model in it when a binary is given."""
    _check(runner, [settings.adb, "-s", settings.serial, "shell", "mkdir", "-p", REMOTE_DIR], "creating " + REMOTE_DIR)
    if settings.binary:
        if not Path(settings.binary).is_file():
            raise DeviceError(f"benchmark binary {settings.binary} does not exist",
                              "build it (bazel build -c opt --config=android_arm64 "
                              "//tensorflow/lite/tools/benchmark:benchmark_model) or download the android_aarch64 "
                              "prebuilt, and pass its path")
        _check(runner, [settings.adb, "-s", settings.serial, "push", str(settings.binary),
                        f"{REMOTE_DIR}/benchmark_model"], "pushing benchmark_model")
        _check(runner, [settings.adb, "-s", settings.serial, "shell", "chmod", "755", f"{REMOTE_DIR}/benchmark_model"],
               "making benchmark_model executable")


def _bundle_records(path: Path, settings: DeviceSettings, runner: Runner, progress: Callable[[str], None]) -> list:
    """benchmark_model on every .tflite file of one bundle: one record per delegate × threads × bucket."""
    from pocketbert import runtime
    from pocketbert.runtime.errors import BundleError

    try:
        bundle = runtime.Bundle.open(path)
    except BundleError as exc:
        raise DeviceError(exc.problem, exc.fix) from exc
    info = describe_bundle(bundle.path, bundle.manifest)
    tflite = [a for a in bundle.artifacts if a.backend == "tflite" and a.passed]
    if not tflite:
        raise DeviceError(f"{path} has no .tflite artifact", "convert with --format tflite (or the default)")
    vocab = int(bundle.manifest.get("model_vocab_size") or bundle.manifest["tokenizer"]["vocab_size"])
    opts = ",".join(o for o in bundle.manifest.get("opts") or [] if o != "int8")
    records = []
    for art in tflite:
        remote = f"{REMOTE_DIR}/{bundle.path.name}--{art.file}"
        _check(runner, [settings.adb, "-s", settings.serial, "push", str(art.path), remote], f"pushing {art.file}")
        for delegate in delegates(settings):
            for threads in settings.threads:
                for seq in settings.seq_lens:
                    record = _record(info, bundle, art, opts, threads=threads, seq=seq, delegate=delegate,
                                     settings=settings)
                    if seq not in (art.details.get("buckets") or []):
                        record["skipped"] = f"no seq_{seq} signature (buckets {art.details.get('buckets')})"
                    else:
                        argv = benchmark_command(settings, remote, threads, seq, delegate=delegate,
                                                 tensors=signature_tensors(art.path, seq), vocab=vocab)
                        code, out, err = runner(argv)
                        try:
                            _fill(record, parse(out + "\n" + err))
                        except BenchmarkOutputError as exc:
                            record["skipped"] = f"benchmark_model failed (exit {code}): {exc}"
                        record["command"] = argv[-1]
                    records.append(record)
                    progress(f"  {info['model']} {art.recipe} {delegate} t{threads} s{seq}: "
                             + (record["skipped"] or f"avg {record['timed']['mean_ms']:.2f} ms"))
    return records


def _record(info, bundle, art, opts, threads, seq, delegate, settings) -> dict:
    return {**info, "bundle": str(bundle.path), "variant": "bundle", "runner": art.recipe, "opts": opts,
            "backend": "tflite", "precision": art.precision, "delegate": delegate, "threads": threads,
            "seq_len": seq, "batch": 1, "where": f"device:{settings.serial}", "taskset": settings.taskset,
            "init_ms": None, "first_ms": None, "warmup": None, "timed": None, "peak_rss_mb": None,
            "size_bytes": art.path.stat().st_size, "macs": None, "floor": None, "skipped": None, "notes": []}


def _fill(record: dict, parsed: dict) -> None:
    record.update(init_ms=parsed["init_ms"], first_ms=parsed["first_ms"], warmup=parsed["warmup"],
                  timed=parsed["timed"], benchmark_model_format=parsed["format"])
    memory = parsed["memory_mb"]
    if parsed["periodic_peak_mb"] is not None:
        record["peak_rss_mb"] = parsed["periodic_peak_mb"]
    elif memory and memory["kind"] == "peak":
        record["peak_rss_mb"] = memory["overall"]
    if memory and memory["kind"] != "peak":
        record["notes"].append(f"benchmark_model reports a memory delta from its start: {memory['overall']} MB")
    if record["timed"]["p50_ms"] is None:
        record["notes"].append("benchmark_model printed no percentiles: p50/p90/p99 are not known")
