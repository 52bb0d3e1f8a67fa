"""Hostile input to every command line and to the runtime API: each is refused with a clear message
(or handled), never with a traceback, and user text is never taken for rich markup.

One table per surface.  A row gives the arguments, the expected exit code (or exception class) and
substrings the message must contain; every row also checks that no traceback was printed.  The
runtime's and the benchmarks' command lines run as real processes with ``FORCE_COLOR=1``, so rich
behaves as on a terminal: markup in a text, a label or a path would be restyled, become a live
OSC-8 hyperlink (``ESC ]8;``) or crash with MarkupError.  The converter's rows run in-process
(``cli.main``, as in test_bad_input.py: importing torch per row would cost seconds), plus a few real
processes for the terminal-only checks.  Conversions are never started: every row fails on its
options or paths first, except one small ONNX export that checks the summary's printing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pocketbert import runtime
from pocketbert.converter import cli as converter_cli
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.pipeline import ConvertOptions, convert
from pocketbert.runtime.contract import bundle_input_length
from pocketbert.runtime.errors import BundleError, InputError, ModelError

from .conftest import DATA
from .runtime.conftest import cls_bundle, ner_bundle  # noqa: F401  (session fixtures: small real bundles)

REPO = Path(__file__).resolve().parents[1]

# Markup rich would act on: a bare closing tag (MarkupError), styling, a hyperlink, an emoji code.
HOSTILE_TEXT = "see a[/] b [bold red]loud[/] [link=http://evil.example]click[/link] :smile: end"
HOSTILE_LABELS = ["neg [bold red]x[/]", "[link=http://evil.example]click[/link]", "a[/] b"]
HOSTILE_NOTE = "note [bold]kept[/] as is [/] [link=http://evil.example]x[/link]"
# A terminal's own hyperlink escape inside a text: must not reach the terminal as one.
OSC8_TEXT = "go \x1b]8;;http://evil.example\x1b\\here\x1b]8;;\x1b\\ now"

ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")


# --- what every row checks ------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    argv: list[str]
    code: int
    needles: list[str] = field(default_factory=list)
    stdin: bytes | None = None
    absent: list[str] = field(default_factory=list)  # must not be in the output


def check_output(raw: str, code: int, case: Case) -> None:
    shown = ANSI_SGR.sub("", raw)
    assert code == case.code, f"{case.id}: exit {code}, expected {case.code}\n{shown}"
    assert "Traceback" not in shown and "MarkupError" not in shown, f"{case.id}: traceback\n{shown}"
    assert "\x1b]8;" not in raw, f"{case.id}: a live terminal hyperlink was printed\n{raw!r}"
    flat = " ".join(shown.split())  # the console wraps long lines where the paths' lengths put the break
    for needle in case.needles:
        assert " ".join(needle.split()) in flat, f"{case.id}: {needle!r} not in the output\n{shown}"
    for needle in case.absent:
        assert needle not in shown, f"{case.id}: {needle!r} in the output\n{shown}"


def terminal_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TTY_COMPATIBLE", "POCKETBERT_VERBOSE")}
    env.update(FORCE_COLOR="1", COLUMNS="240", PYTHONIOENCODING="utf-8")
    return env


def run_module(module: str, case: Case, paths: dict[str, str]) -> None:
    argv = [a.format(**paths) for a in case.argv]
    done = subprocess.run([sys.executable, "-m", module, *argv], input=case.stdin or b"", capture_output=True,
                          timeout=180, env=terminal_env(), cwd=REPO)
    check_output(done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace"),
                 done.returncode, case)


# --- the hostile world: bundles, checkpoints and files --------------------------------------------

def copy_bundle(source: Path, dest: Path, **manifest_changes) -> Path:
    """A copy with its manifest changed, and kept consistent with its own files (labels.txt, the logits' width,
    the tokenizer's and the verified length), so that the case reaches the check it is about."""
    shutil.copytree(source, dest)
    manifest = json.loads((dest / "manifest.json").read_text(encoding="utf-8"))
    manifest.update(manifest_changes)
    if "labels" in manifest_changes:
        data = "".join(f"{label}\n" for label in manifest["labels"]).encode("utf-8")
        (dest / "labels.txt").write_bytes(data)
        manifest["files"]["labels.txt"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        manifest["outputs"][0]["shape"][-1] = len(manifest["labels"])
        for artifact in manifest["artifacts"]:
            if "metadata" in (artifact.get("details") or {}):
                artifact["details"]["metadata"]["labels"] = manifest["labels"]
    if "max_sequence_length" in manifest_changes:
        manifest["tokenizer"]["max_sequence_length"] = manifest["max_sequence_length"]
        manifest["verification"]["max_length"] = bundle_input_length(manifest)
    (dest / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def paths(tmp_path_factory, ner_bundle, cls_bundle) -> dict[str, str]:  # noqa: F811
    root = tmp_path_factory.mktemp("hostile")
    ner_manifest = json.loads((ner_bundle / "manifest.json").read_text(encoding="utf-8"))
    hostile = copy_bundle(cls_bundle, root / "hostile-labels", labels=HOSTILE_LABELS, notes=[HOSTILE_NOTE])
    extra = copy_bundle(ner_bundle, root / "extra-label", labels=ner_manifest["labels"] + ["B-EXTRA"])
    corrupt = copy_bundle(ner_bundle, root / "corrupt")
    size = (corrupt / "model.onnx").stat().st_size
    (corrupt / "model.onnx").write_bytes(b"\x00\xff" * (size // 2) + b"\x00" * (size % 2))
    for name, content in {"not-json": '{"task": ', "array": "[1, 2]", "empty": ""}.items():
        (root / name).mkdir()
        (root / name / "manifest.json").write_text(content, encoding="utf-8")
    (root / "plain-dir").mkdir()
    (root / "a-file.txt").write_text("I am a file\n", encoding="utf-8")
    (root / "ckpt[bold]file[b]").write_bytes(b"weights?")
    (root / "no[b]config").mkdir()
    (root / "no[b]config" / "model.safetensors").write_bytes(b"\0" * 64)
    (root / "bad-config").mkdir()
    (root / "bad-config" / "config.json").write_text('{"model_type": "bert", "hidden_size": ', encoding="utf-8")
    (root / "latin1-config").mkdir()
    (root / "latin1-config" / "config.json").write_bytes('{"model_type": "b\xe9rt"}'.encode("latin-1"))
    (root / "results").mkdir()
    checked = damaged_bundles(root, ner_bundle)
    return {"root": str(root), "ner": str(ner_bundle), "cls": str(cls_bundle), "hostile": str(hostile),
            "extra": str(extra), "corrupt": str(corrupt), **checked,
            # a path with markup in it: '[/]' nests directories, so it is an ordinary path
            "marked": str(root / "no[bold]such[/]bundle [link=http://evil.example]x[/link]")}


def damaged_bundles(root: Path, ner_bundle: Path) -> dict[str, str]:
    """Bundles the runtime refuses (or must read only in part), and results files no report can read."""
    flipped = copy_bundle(ner_bundle, root / "flipped")
    data = bytearray((flipped / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit in the weights: the file still loads, its SHA-256 differs
    (flipped / "model.onnx").write_bytes(bytes(data))
    truncated = copy_bundle(ner_bundle, root / "truncated")
    (truncated / "model.onnx").write_bytes(data[:len(data) // 2])
    linked = copy_bundle(ner_bundle, root / "linked")  # an unlisted file leading outside the bundle
    (linked / "special_tokens_map.json").symlink_to(root / "a-file.txt")
    manifest = json.loads((ner_bundle / "manifest.json").read_text(encoding="utf-8"))
    tokenizer = {**manifest["tokenizer"], "special_tokens": {**manifest["tokenizer"]["special_tokens"],
                                                             "pad": {"token": "[PAD]", "id": 200_000}}}
    pad = copy_bundle(ner_bundle, root / "pad-beyond-embeddings", tokenizer=tokenizer)
    long = copy_bundle(ner_bundle, root / "longer-than-positions", max_sequence_length=4096,  # no TFLite bucket
                       artifacts=[a for a in manifest["artifacts"] if a["backend"] == "onnx"])  # caps the length
    (root / "unreadable-results").mkdir()
    for name, content in {"a.json": b'{"schema": ', "b.json": b"\xff\xfe", "c.json": b"[1]"}.items():
        (root / "unreadable-results" / name).write_bytes(content)
    return {"flipped": str(flipped), "truncated": str(truncated), "linked": str(linked), "pad": str(pad),
            "long": str(long)}


# --- python -m runtime ----------------------------------------------------------------------------

RUNTIME_CASES = [
    # markup in texts, labels, notes, paths and error messages is printed verbatim
    Case("table-text-markup", ["{ner}", HOSTILE_TEXT, "--output", "table"], 0, [HOSTILE_TEXT]),
    Case("table-labels-and-note-markup", ["{hostile}", "a fine film", "--top-k", "3", "--output", "table"], 0,
         [*HOSTILE_LABELS, HOSTILE_NOTE]),
    Case("jsonl-labels-markup", ["{hostile}", "a fine film", "--top-k", "3"], 0,
         [json.dumps(label) for label in HOSTILE_LABELS]),
    Case("table-terminal-escape-in-text", ["{ner}", OSC8_TEXT, "--output", "table"], 0, ["here", "now"]),
    Case("missing-bundle-with-markup", ["{marked}", "x"], 3, ["{marked}", "does not exist"]),
    Case("not-a-bundle-with-markup", ["{root}/no[b]config", "x"], 3, ["no[b]config", "manifest.json"]),
    Case("model-error-shape-kept", ["{extra}", "x"], 4, ["[batch, sequence, 10]", "10 labels"]),
    # the bundle argument
    Case("empty-bundle-path", ["", "x"], 2, ["BUNDLE", "empty"]),
    Case("bundle-is-a-file", ["{root}/a-file.txt", "x"], 2, ["a-file.txt", "is a file"]),
    Case("manifest-not-json", ["{root}/not-json", "x"], 3, ["manifest.json", "not valid JSON"]),
    Case("manifest-json-array", ["{root}/array", "x"], 3, ["manifest.json", "JSON object"]),
    Case("manifest-empty", ["{root}/empty", "x"], 3, ["manifest.json", "not valid JSON"]),
    Case("corrupt-model-unverified", ["{corrupt}", "x", "--backend", "onnx", "--no-verify"], 4,
         ["model.onnx", "cannot load"]),
    Case("corrupt-model-verified", ["{corrupt}", "x", "--backend", "onnx"], 3, ["model.onnx", "SHA-256"]),
    # options
    Case("threads-zero", ["{ner}", "x", "--threads", "0"], 2, ["--threads"]),
    Case("threads-negative-tflite", ["{ner}", "x", "--backend", "tflite", "--threads", "-1"], 2, ["--threads"]),
    Case("batch-size-zero", ["{ner}", "x", "--batch-size", "0"], 2, ["--batch-size"]),
    Case("top-k-zero", ["{cls}", "x", "--top-k", "0"], 2, ["--top-k"]),
    Case("stride-negative", ["{ner}", "x", "--stride", "-1"], 2, ["--stride"]),
    Case("stride-huge", ["{ner}", "x", "--stride", "100000"], 5, ["stride 100000"]),
    Case("unknown-backend", ["{ner}", "x", "--backend", "coreml"], 2, ["coreml"]),
    Case("unknown-precision", ["{ner}", "x", "--precision", "int3"], 3, ["int3", "onnx:fp32"]),
    Case("recipe-comma", ["{ner}", "x", "--recipe", ","], 3, ["','", "onnx:fp32"]),
    Case("unknown-aggregation", ["{ner}", "x", "--aggregation", "bogus"], 2, ["bogus"]),
    Case("unknown-output", ["{ner}", "x", "--output", "html"], 2, ["html"]),
    # input
    Case("file-is-a-directory", ["{ner}", "--file", "{root}"], 2, ["--file", "directory"]),
    Case("file-missing", ["{ner}", "--file", "{root}/none.txt"], 2, ["--file", "none.txt"]),
    Case("stdin-not-utf8-on-line-3", ["{ner}"], 5, ["line 3 is not UTF-8"], stdin=b"ok\nfine\n\xff\xfebad\n"),
    Case("pairs-with-three-fields", ["{cls}", "--pairs"], 5, ["3 tab-separated fields"], stdin=b"a\tb\tc\n"),
    Case("empty-text", ["{ner}", ""], 0, ['"entities": []']),
    Case("threads-huge", ["{ner}", "x", "--threads", "100000"], 2, ["--threads", "256"]),
    Case("argument-not-utf8", ["{ner}", "ok", "caf\udce9 au lait"], 5, ["text argument 2 is not UTF-8"]),
]


@pytest.mark.parametrize("case", RUNTIME_CASES, ids=lambda c: c.id)
def test_runtime_cli(case, paths):
    case.needles = [n.format(**paths) for n in case.needles]
    run_module("pocketbert.runtime", case, paths)


# --- python -m benchmarks -------------------------------------------------------------------------

BENCHMARK_CASES = [
    Case("gates-missing-bundle", ["gates", "{root}/nope"], 3, ["nope", "does not exist"]),
    Case("gates-manifest-not-json", ["gates", "{root}/not-json"], 3, ["not valid JSON"]),
    Case("gates-manifest-array", ["gates", "{root}/array"], 3, ["JSON object"]),
    Case("gates-bundle-is-a-file", ["gates", "{root}/a-file.txt"], 3, ["a-file.txt", "not a directory"]),
    Case("gates-no-manifest", ["gates", "{root}/plain-dir"], 3, ["plain-dir", "manifest.json"]),
    Case("gates-path-with-markup", ["gates", "{marked}"], 3, ["{marked}"]),
    Case("gates-without-teacher-scores", ["gates", "{ner}"], 3, ["records no teacher scores"]),
    Case("latency-path-with-markup", ["latency", "{marked}"], 3, ["{marked}", "does not exist"]),
    Case("latency-bundle-is-a-file", ["latency", "{root}/a-file.txt"], 3, ["a-file.txt", "not a directory"]),
    Case("latency-manifest-not-json", ["latency", "{root}/not-json", "--no-floor"], 3, ["not valid JSON"]),
    Case("latency-threads-zero", ["latency", "{ner}", "--threads", "0"], 2, ["--threads"]),
    Case("latency-unknown-backend", ["latency", "{ner}", "--backend", "coreml"], 2, ["coreml"]),
    Case("accuracy-without-task", ["accuracy", "{ner}"], 2, ["--task"]),
    Case("accuracy-unknown-split", ["accuracy", "{ner}", "--task", "conll2003", "--split", "train"], 2, ["train"]),
    Case("accuracy-manifest-not-json", ["accuracy", "{root}/not-json", "--task", "glue:sst2"], 3,
         ["not valid JSON"]),
    Case("device-manifest-array", ["device", "--serial", "x", "--dry-run", "{root}/array"], 3, ["JSON object"]),
    Case("report-no-results", ["report", "--results", "{root}/results", "--out", "{root}/r.md"], 3,
         ["no results files"]),
    # bundles are read through the runtime's checked loader only
    Case("accuracy-flipped-byte", ["accuracy", "{flipped}", "--task", "conll2003", "--limit", "5", "--backend",
                                   "onnx", "--out", "{root}/acc.json"], 3, ["model.onnx", "SHA-256 differs"]),
    Case("accuracy-truncated-model", ["accuracy", "{truncated}", "--task", "conll2003", "--limit", "5",
                                      "--out", "{root}/acc.json"], 3, ["model.onnx", "truncated"]),
    Case("accuracy-reads-listed-files-only", ["accuracy", "{linked}", "--task", "conll2003", "--limit", "5",
                                              "--backend", "onnx", "--out", "{root}/acc.json"], 0, ["acc.json"]),
    Case("full-integer-not-a-bundle", ["full-integer", "{root}/plain-dir"], 3, ["plain-dir", "manifest.json"]),
    Case("full-integer-levers-not-a-bundle", ["full-integer-levers", "{root}/plain-dir"], 3,
         ["plain-dir", "manifest.json"]),
    Case("latency-out-cannot-exist", ["latency", "{ner}", "--out", "{root}/a-file.txt/l.json"], 2,
         ["--out", "a-file.txt", "not a directory"]),
    Case("report-only-unreadable-results", ["report", "--results", "{root}/unreadable-results", "--out",
                                            "{root}/r.md"], 3, ["a.json", "b.json", "c.json", "readable"]),
]


@pytest.mark.parametrize("case", BENCHMARK_CASES, ids=lambda c: c.id)
def test_benchmarks_cli(case, paths):
    case.needles = [n.format(**paths) for n in case.needles]
    run_module("pocketbert.benchmarks", case, paths)


# --- python -m converter --------------------------------------------------------------------------

CKPT = "{ckpt}"
OUT = ["--out", "{out}", "--no-latency"]
CONVERTER_CASES = [
    # markup in paths and option values is printed verbatim
    Case("missing-checkpoint-with-markup", ["{marked}", *OUT], 3, ["{marked}", "does not exist"]),
    Case("checkpoint-file-with-markup", ["{root}/ckpt[bold]file[b]", *OUT], 3, ["ckpt[bold]file[b]", "is a file"]),
    Case("no-config-with-markup", ["{root}/no[b]config", *OUT], 3, ["no[b]config", "config.json"]),
    Case("unknown-opt-with-markup", [CKPT, "--opt", "nonorm,[bold]x[/]", *OUT], 3, ["'[bold]x[/]'"]),
    Case("calibration-with-markup", [CKPT, "--opt", "int8", "--calibration", "{root}/c[red]al[/].txt", *OUT], 3,
         ["c[red]al[/].txt", "does not exist"]),
    Case("finetune-task-file-with-markup", ["finetune", CKPT, "--task", "{root}/t[bold]x[/].tsv", "--out", "{out}"],
         3, ["t[bold]x[/].tsv", "does not exist"]),
    Case("share-embeddings-base-with-markup", ["share-embeddings", CKPT, "--base", "{root}/b[link=x]y[/link]",
                                               "--task", "glue:sst2", "--out", "{out}"], 3, ["b[link=x]y[/link]"]),
    # the small cases
    Case("recipe-comma", [CKPT, "--recipe", ",", *OUT], 3, ["--recipe", "no recipe"]),
    Case("buckets-comma", [CKPT, "--buckets", ",", *OUT], 2, ["--buckets"]),
    Case("data-dir-missing", [CKPT, "--data-dir", "{root}/no-data", *OUT], 3, ["{root}/no-data", "does not exist"]),
    Case("data-dir-is-a-file", [CKPT, "--data-dir", "{root}/a-file.txt", *OUT], 3, ["a-file.txt", "not a directory"]),
    Case("finetune-data-dir-missing", ["finetune", CKPT, "--task", "glue:sst2", "--data-dir", "{root}/no-data",
                                       "--out", "{out}"], 3, ["{root}/no-data", "does not exist"]),
    Case("threads-zero", [CKPT, "--threads", "0", *OUT], 2, ["--threads"]),
    Case("threads-negative", [CKPT, "--threads", "-1", *OUT], 2, ["--threads"]),
    # the checkpoint
    Case("empty-checkpoint", ["", *OUT], 2, ["CHECKPOINT", "empty"]),
    Case("config-not-json", ["{root}/bad-config", *OUT], 3, ["config.json", "not valid JSON"]),
    Case("config-not-utf8", ["{root}/latin1-config", *OUT], 3, ["config.json", "utf-8"]),
    # options
    Case("max-length-huge", [CKPT, "--max-length", "1000000", *OUT], 3, ["--max-length 1000000"]),
    Case("max-length-negative", [CKPT, "--max-length", "-5", *OUT], 3, ["--max-length -5"]),
    Case("max-length-not-a-number", [CKPT, "--max-length", "lots", *OUT], 2, ["--max-length", "lots"]),
    Case("unknown-format", [CKPT, "--format", "coreml", *OUT], 3, ["'coreml'", "onnx, tflite"]),
    Case("unknown-recipe", [CKPT, "--recipe", "tflite:int4", *OUT], 3, ["'tflite:int4'"]),
    Case("unknown-task", [CKPT, "--task", "translation", *OUT], 2, ["translation"]),
    Case("unknown-int8-method", [CKPT, "--opt", "int8", "--int8", "int4", *OUT], 2, ["int4"]),
    Case("empty-label", [CKPT, "--labels", "a,,b", *OUT], 2, ["empty label"]),
    Case("verify-samples-too-few", [CKPT, "--verify-samples", "5", *OUT], 2, ["--verify-samples"]),
    Case("budget-unreadable", [CKPT, "--recover-budget", "forever", *OUT], 2, ["forever"]),
    Case("unknown-option", [CKPT, "--turbo", *OUT], 2, ["--turbo"]),
    Case("trim-vocab-size-too-small", ["trim-vocab", CKPT, "--task", "glue:sst2", "--size", "5", "--out", "{out}"],
         2, ["--size"]),
    Case("out-under-a-file", [CKPT, "--out", "{root}/a-file.txt/bundle", "--no-latency"], 6, ["a-file.txt"]),
    Case("seed-huge", [CKPT, "--seed", "99999999999999999999999", *OUT], 2, ["--seed"]),
    Case("opt-comma", [CKPT, "--opt", ",", *OUT], 2, ["--opt", "names no optimisation"]),
    Case("opt-empty", [CKPT, "--opt", "", *OUT], 2, ["--opt", "names no optimisation"]),
    Case("data-dir-empty", [CKPT, "--data-dir", "", *OUT], 2, ["--data-dir", "empty"]),
    Case("recovery-flags-without-recover", [CKPT, "--recover-budget", "5m", "--max-accuracy-drop", "2", *OUT], 2,
         ["--recover-budget", "--max-accuracy-drop", "--recover TASK"]),
]


@pytest.mark.parametrize("case", CONVERTER_CASES, ids=lambda c: c.id)
def test_converter_cli(case, paths, checkpoints, tmp_path, capsys):
    values = {**paths, "ckpt": str(checkpoints["bert"]["classification"]), "out": str(tmp_path / "bundle")}
    code = converter_cli.main([a.format(**values) for a in case.argv])
    captured = capsys.readouterr()
    case.needles = [n.format(**values) for n in case.needles]
    check_output(captured.out + captured.err, code, case)
    assert not (tmp_path / "bundle").exists(), f"{case.id}: a bundle was written"


@pytest.mark.parametrize("case", [
    Case("missing-checkpoint-with-markup", ["{marked}", "--out", "{root}/never"], 3, ["{marked}", "does not exist"]),
    Case("unknown-opt-with-markup", ["{root}/x", "--opt", "[link=http://evil.example]x[/link]", "--out",
                                     "{root}/never"], 3,
         ["'[link=http://evil.example]x[/link]'"]),
], ids=lambda c: c.id)
def test_converter_cli_on_a_terminal(case, paths):
    case.needles = [n.format(**paths) for n in case.needles]
    run_module("pocketbert.converter", case, paths)


def test_converter_summary_prints_paths_verbatim(checkpoints, tmp_path, capsys):
    """A successful conversion into a directory whose name holds markup: the summary names it as it is."""
    out = tmp_path / "out [bold]x[/b] [link=http://evil.example]y[/link]"
    code = converter_cli.main([str(checkpoints["bert"]["classification"]), "--out", str(out), "--format", "onnx",
                               "--no-latency", "--verify-samples", "10"])
    captured = capsys.readouterr()
    check_output(captured.out + captured.err, code, Case("summary", [], 0))
    assert f"Bundle {out}" in " ".join(captured.out.split())  # the title may wrap
    assert (out / "manifest.json").is_file()


@pytest.mark.parametrize("threads", [0, -1])
def test_converter_api_threads(checkpoints, tmp_path, threads):
    """The API takes what the CLI's --threads refuses: it must fail before loading, not run on one thread."""
    options = ConvertOptions(checkpoint=str(checkpoints["bert"]["classification"]), out=tmp_path / "b", threads=threads)
    with pytest.raises(ConverterInputError, match="--threads"):
        convert(options)
    assert not (tmp_path / "b").exists()


# config.json fields of the wrong type: each named, none a traceback
CONFIG_CASES = {
    "model-type-a-list": ({"model_type": ["bert"]}, "'model_type'"),
    "id2label-keys-not-integers": ({"id2label": {"a": "x", "b": "y", "c": "z"}}, "'id2label'"),
    "id2label-a-list": ({"id2label": ["x", "y", "z"]}, "'id2label'"),
    "num-labels-a-string": ({"num_labels": "3", "id2label": None}, "'num_labels'"),
    "pocketbert-a-string": ({"pocketbert": "x"}, "'pocketbert'"),
    "transforms-a-string": ({"pocketbert": {"transforms": "nonorm"}}, "'pocketbert.transforms'"),
    "base-embeddings-without-sha256": ({"pocketbert": {"base_embeddings": {"model": "minilm"}}},
                                       "'pocketbert.base_embeddings'"),
    "base-embeddings-corrupt-file": ({"pocketbert": {"base_embeddings": {"model": "{base}", "sha256": "0" * 64}}},
                                     "cannot be read"),
}


@pytest.mark.parametrize("name", list(CONFIG_CASES))
def test_converter_config_fields(name, checkpoints, tmp_path, capsys):
    changes, needle = CONFIG_CASES[name]
    base = tmp_path / "base"
    base.mkdir()
    (base / "model.safetensors").write_bytes(b"\x01" * 100)  # not a safetensors header
    checkpoint = shutil.copytree(checkpoints["bert"]["classification"], tmp_path / "ckpt")
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        value = json.loads(json.dumps(value).replace("{base}", str(base)))
        config.pop(key) if value is None else config.__setitem__(key, value)
    (checkpoint / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code = converter_cli.main([str(checkpoint), "--out", str(tmp_path / "bundle"), "--format", "onnx",
                               "--no-latency"])
    captured = capsys.readouterr()
    check_output(captured.out + captured.err, code, Case(name, [], 3, [needle, "fix:"]))
    assert not (tmp_path / "bundle").exists()


# --- the runtime API ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def api(paths):
    return {**paths, "ner_pipe": runtime.load(paths["ner"], "onnx"), "cls_pipe": runtime.load(paths["cls"], "onnx")}


API_CASES = [
    ("threads-negative-tflite", lambda a: runtime.load(a["ner"], "tflite", threads=-1), InputError, "threads"),
    ("threads-zero-onnx", lambda a: runtime.load(a["ner"], "onnx", threads=0), InputError, "threads"),
    ("threads-not-an-integer", lambda a: runtime.load(a["ner"], "onnx", threads="2"), InputError, "threads"),
    ("batch-size-zero", lambda a: runtime.load(a["ner"], batch_size=0), InputError, "batch_size"),
    ("instances-zero", lambda a: runtime.load(a["ner"], "tflite", instances=0), InputError, "instances"),
    ("unknown-backend", lambda a: runtime.load(a["ner"], "coreml"), BundleError, "coreml"),
    ("bundle-is-a-file", lambda a: runtime.load(f"{a['root']}/a-file.txt"), BundleError, "not a directory"),
    ("manifest-array", lambda a: runtime.load(f"{a['root']}/array"), BundleError, "JSON object"),
    ("labels-do-not-match-model", lambda a: runtime.load(a["extra"]), ModelError, "[batch, sequence, 10]"),
    ("ignore-labels-number", lambda a: a["ner_pipe"]("Peter Blackburn", ignore_labels=5), InputError, "ignore_labels"),
    ("ignore-labels-not-strings", lambda a: a["ner_pipe"]("Peter Blackburn", ignore_labels=["O", None]), InputError,
     "ignore_labels"),
    ("stride-negative", lambda a: a["ner_pipe"]("Peter Blackburn", stride=-1), InputError, "stride"),
    ("top-k-zero", lambda a: a["cls_pipe"]("fine", top_k=0), InputError, "top_k"),
    ("bytes-text", lambda a: a["cls_pipe"](b"fine"), InputError, "bytes"),
    ("threads-huge", lambda a: runtime.load(a["ner"], "onnx", threads=100_000), InputError, "256"),
    ("pad-id-beyond-vocabulary", lambda a: runtime.load(a["pad"], "onnx"), BundleError,
     "'tokenizer.special_tokens.pad' has id 200000"),
    ("max-length-beyond-positions", lambda a: runtime.load(a["long"], "onnx"), ModelError, "4096 tokens"),
    ("top-k-true", lambda a: a["cls_pipe"]("fine", top_k=True), InputError, "top_k"),
    ("stride-a-string", lambda a: a["ner_pipe"]("Peter Blackburn", stride="3"), InputError, "stride"),
]


@pytest.mark.parametrize("call, error, needle", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_runtime_api(api, call, error, needle):
    with pytest.raises(error) as info:
        call(api)
    assert needle in str(info.value) and info.value.fix


def test_ignore_labels_none_and_a_bare_string(api):
    """As in Hugging Face's pipeline, ``None`` means the default (``["O"]``); a bare string is one label."""
    ner = api["ner_pipe"]
    text = "Peter Blackburn met EU officials in Brussels ."
    everything = ner(text, aggregation="none", ignore_labels=[])
    default = ner(text, aggregation="none")
    assert ner(text, aggregation="none", ignore_labels=None) == default
    assert ner(text, aggregation="none", ignore_labels="O") == default
    tag = everything[0]["entity"]
    assert ner(text, aggregation="none", ignore_labels=tag) == [e for e in everything if e["entity"] != tag]
    group = ner(text)[0]["entity_group"]
    assert all(e["entity_group"] != group for e in ner(text, ignore_labels=group))


# --- outputs and rows that must not be lost ---------------------------------------------------------

def foreign_manifest(out: Path) -> None:
    """Another tool's folder whose manifest.json happens to have a schema_version and a files object."""
    out.mkdir()
    (out / "manifest.json").write_text('{"schema_version": 3, "files": {"report.pdf": {"size": 1}}}\n')
    (out / "report.pdf").write_text("data\n")


def edited_bundle(out: Path, change: str) -> None:
    """A bundle as PocketBERT writes it, then a listed file edited (same size) or deleted."""
    from pocketbert.runtime.contract import write_manifest

    out.mkdir()
    (out / "model.onnx").write_bytes(b"\x08\x07 my model")
    (out / "notes.txt").write_text("mine\n")
    write_manifest(out, {"schema_version": 1, "pocketbert_version": "0.1.0", "artifacts": []})
    if change == "edited":
        (out / "notes.txt").write_text("MINE\n")
    else:
        (out / "notes.txt").unlink()


OVERWRITE_CASES = [
    (Case("overwrite-foreign-manifest", [CKPT, "--format", "onnx", *OUT, "--overwrite"], 6,
          ["not a PocketBERT bundle", "report.pdf", "fix:"]), foreign_manifest),
    (Case("overwrite-bundle-file-edited", [CKPT, "--format", "onnx", *OUT, "--overwrite"], 6,
          ["changed", "notes.txt", "fix:"]), lambda out: edited_bundle(out, "edited")),
    (Case("overwrite-bundle-file-deleted", [CKPT, "--format", "onnx", *OUT, "--overwrite"], 6,
          ["missing", "notes.txt"]), lambda out: edited_bundle(out, "deleted")),
]


@pytest.mark.parametrize("case, make", OVERWRITE_CASES, ids=[c[0].id for c in OVERWRITE_CASES])
def test_converter_overwrite_keeps_what_is_not_its_own(case, make, checkpoints, tmp_path, capsys):
    out = tmp_path / "bundle"
    make(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    values = {"ckpt": str(checkpoints["bert"]["classification"]), "out": str(out)}
    code = converter_cli.main([a.format(**values) for a in case.argv])
    captured = capsys.readouterr()
    check_output(captured.out + captured.err, code, case)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def shaped_like_a_checkpoint(out: Path) -> None:
    """A user's folder with a training.json naming a PocketBERT command and files of checkpoint names."""
    out.mkdir()
    (out / "training.json").write_text('{"kind": "finetune", "task": "glue:sst2"}\n')
    (out / "config.json").write_text('{"model_type": "bert"}\n')
    (out / "model.safetensors").write_bytes(b"my only copy of these weights")


def trained_checkpoint(written: Path, out: Path, change: str) -> None:
    """A checkpoint as PocketBERT's checkpoint commands write it, then changed."""
    shutil.copytree(written, out)
    if change == "no-files-recorded":  # as written before checkpoints recorded their files
        record = json.loads((out / "training.json").read_text(encoding="utf-8"))
        del record["files"], record["pocketbert_version"]
        (out / "training.json").write_text(json.dumps(record), encoding="utf-8")
    elif change == "edited":
        (out / "config.json").write_text('{"model_type": "bert", "mine": true}\n')
    elif change == "deleted":
        (out / "README.md").unlink()
    else:  # a user's file with a name a checkpoint could have
        (out / "tokenizer_notes.json").write_text('{"mine": true}\n')


CHECKPOINT_COMMANDS = {
    "finetune": ["finetune", "{bare}", "--task", "glue:sst2"],  # would train and replace the folder
    "recover": ["recover", CKPT, "--task", "glue:sst2", "--opt", "relu"],
    "trim-vocab": ["trim-vocab", CKPT, "--task", "glue:sst2", "--size", "500"],
    "share-embeddings": ["share-embeddings", CKPT, "--task", "glue:sst2"],
}
OLD_CHECKPOINT_NEEDLES = ["records no size and SHA-256", "delete", "yourself", "another --out"]
CHECKPOINT_OVERWRITE_CASES = [
    (Case("finetune-overwrite-folder-shaped-like-a-checkpoint", CHECKPOINT_COMMANDS["finetune"], 6,
          OLD_CHECKPOINT_NEEDLES), lambda out, written: shaped_like_a_checkpoint(out)),
    (Case("recover-overwrite-checkpoint-without-recorded-files", CHECKPOINT_COMMANDS["recover"], 6,
          OLD_CHECKPOINT_NEEDLES), lambda out, written: trained_checkpoint(written, out, "no-files-recorded")),
    (Case("trim-vocab-overwrite-checkpoint-file-edited", CHECKPOINT_COMMANDS["trim-vocab"], 6,
          ["changed", "config.json", "fix:"]), lambda out, written: trained_checkpoint(written, out, "edited")),
    (Case("share-embeddings-overwrite-checkpoint-file-deleted", CHECKPOINT_COMMANDS["share-embeddings"], 6,
          ["missing", "README.md"]), lambda out, written: trained_checkpoint(written, out, "deleted")),
    (Case("finetune-overwrite-checkpoint-with-a-file-of-a-checkpoint-name", CHECKPOINT_COMMANDS["finetune"], 6,
          ["besides the checkpoint", "tokenizer_notes.json"]),
     lambda out, written: trained_checkpoint(written, out, "user-file")),
]


@pytest.fixture(scope="module")
def written_checkpoint(checkpoints, tmp_path_factory) -> Path:
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.training.save import save_trained

    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    return save_trained(loaded.model, loaded.tokenizer, tmp_path_factory.mktemp("written") / "ckpt", overwrite=False,
                        record={"kind": "finetune", "task": "glue:sst2"}, card="# card\n")


@pytest.mark.parametrize("case, make", CHECKPOINT_OVERWRITE_CASES, ids=[c[0].id for c in CHECKPOINT_OVERWRITE_CASES])
def test_checkpoint_overwrite_keeps_what_is_not_its_own(case, make, checkpoints, written_checkpoint, tmp_path,
                                                          capsys):
    """A checkpoint is replaced only when its training.json lists every file with its size and SHA-256."""
    out = tmp_path / "ckpt"
    make(out, written_checkpoint)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    values = {"ckpt": str(checkpoints["bert"]["classification"]), "bare": str(checkpoints["bert"]["none"])}
    argv = [a.format(**values) for a in case.argv]
    code = converter_cli.main([*argv, "--data-dir", str(DATA), "--train-limit", "8", "--out", str(out),
                               "--overwrite"])
    captured = capsys.readouterr()
    check_output(captured.out + captured.err, code, case)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no staging directory left beside it


CORPUS_INPUTS = {
    "unclosed.csv": b'id,text\n1,good\n2,"never closed\n3,fine\n',
    "numbers.jsonl": b'{"id": 1.10, "big": 1e400, "text": "fine", "tiny": -0.0}\n',
    "nan.jsonl": b'{"id": 1, "text": "fine"}\n{"id": 2, "text": "x", "score": NaN}\n{"id": 3, "text": "ok"}\n',
    # a carriage return inside a line (CRLF line ends are fine): TSV has no quoting to hold it
    "cr.tsv": b'id\ttext\r\n1\tgood\r\n2\tsay "bad\rrow\r\n3\tfine\n',
    "cr.csv": b'id,text\n1,good\n2,"quoted\rbreak"\n3,bad\rrow\n4,fine\n',
}
CORPUS_CASES = [
    Case("csv-unclosed-quote-skipped", ["{cls}", "--input", "{work}/unclosed.csv", "--output", "{work}/o.csv",
                                        "--skip-bad"], 0, ["line 3", "never closed", "line 4"]),
    Case("csv-unclosed-quote-stops", ["{cls}", "--input", "{work}/unclosed.csv", "--output", "{work}/o.csv"], 5,
         ["line 3", "never closed", "--skip-bad"]),
    Case("jsonl-numbers-byte-for-byte", ["{cls}", "--input", "{work}/numbers.jsonl", "--output", "{work}/o.jsonl"],
         0),
    Case("jsonl-nan-is-a-bad-row", ["{cls}", "--input", "{work}/nan.jsonl", "--output", "{work}/o.jsonl",
                                    "--skip-bad"], 0, ["line 2", "NaN", "not JSON"]),
    Case("tsv-carriage-return-skipped", ["{cls}", "--input", "{work}/cr.tsv", "--output", "{work}/o.tsv",
                                         "--skip-bad"], 0, ["line 3", "carriage return", "TSV has no quoting"],
         absent=["fix the quoting"]),
    Case("tsv-carriage-return-stops", ["{cls}", "--input", "{work}/cr.tsv", "--output", "{work}/o.tsv"], 5,
         ["line 3", "carriage return", "--skip-bad"]),
    Case("csv-carriage-return-unquoted-skipped", ["{cls}", "--input", "{work}/cr.csv", "--output", "{work}/o.csv",
                                                  "--skip-bad"], 0, ["line 4", "carriage return", "double quotes"]),
]


def corpus_output(case: Case, work: Path) -> bytes | None:
    out = work / f"o.{case.id.split('-')[0]}"
    return out.read_bytes() if out.exists() else None


CORPUS_OUTPUTS = {  # what each row's output must be: every row read is written or reported skipped
    "csv-unclosed-quote-skipped": lambda o: [r.split(b",")[0] for r in o.splitlines()[1:]] == [b"1", b"3"],
    "csv-unclosed-quote-stops": lambda o: o is None,
    "jsonl-numbers-byte-for-byte": lambda o: o.startswith(b'{"id": 1.10, "big": 1e400, "text": "fine", "tiny": -0.0, '
                                                          b'"pred_label": ') and b"Infinity" not in o,
    "jsonl-nan-is-a-bad-row": lambda o: [json.loads(line)["id"] for line in o.splitlines()] == [1, 3],
    "tsv-carriage-return-skipped": lambda o: [r.split(b"\t")[0] for r in o.splitlines()[1:]] == [b"1", b"3"],
    "tsv-carriage-return-stops": lambda o: o is None,
    "csv-carriage-return-unquoted-skipped": lambda o: o.count(b"quoted\rbreak") == 1
    and [r.split(b",")[0] for r in o.split(b"\n")[1:-1]] == [b"1", b"2", b"4"],
}


@pytest.mark.parametrize("case", CORPUS_CASES, ids=lambda c: c.id)
def test_corpus_rows_are_kept_or_reported(case, paths, tmp_path):
    for name, data in CORPUS_INPUTS.items():
        (tmp_path / name).write_bytes(data)
    run_module("pocketbert.runtime", case, {**paths, "work": str(tmp_path)})
    assert CORPUS_OUTPUTS[case.id](corpus_output(case, tmp_path)), corpus_output(case, tmp_path)
    assert not [p.name for p in tmp_path.iterdir() if "lock" in p.name]  # the run's lock is gone with it


def corpus_run(paths: dict, work: Path, *extra: str) -> subprocess.CompletedProcess:
    (work / "in.jsonl").write_text('{"id": 1, "text": "a fine film"}\n{"id": 2, "text": "dull"}\n')
    return subprocess.run([sys.executable, "-m", "pocketbert.runtime", paths["cls"], "--input", str(work / "in.jsonl"),
                           "--output", str(work / "out.jsonl"), *extra], capture_output=True, text=True, timeout=180,
                          env=terminal_env(), cwd=REPO)


def test_corpus_output_in_use_is_refused_naming_its_holder(paths, tmp_path):
    """A second run on the same output, even with --overwrite, must not touch the first run's files."""
    from pocketbert.runtime.corpus.lock import OutputLock

    first = {"out.jsonl.partial": b'{"id": 1}\n', "out.jsonl.partial.progress.json":
             b'{"schema": "pocketbert-corpus-partial/1", "fingerprint": {}, "rows_written": 1, "output_bytes": 10}'}
    for name, data in first.items():
        (tmp_path / name).write_bytes(data)
    with OutputLock(tmp_path / "out.jsonl"):
        second = corpus_run(paths, tmp_path, "--overwrite")
    case = Case("output-in-use", [], 2, ["another run is writing", f"process {os.getpid()}", "out.jsonl.lock"])
    check_output(second.stdout + second.stderr, second.returncode, case)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "in.jsonl"} == first


def test_corpus_lock_of_a_dead_run_is_taken_over_and_a_foreign_one_kept(paths, tmp_path):
    lock = tmp_path / "out.jsonl.lock"
    lock.write_text('{"schema": "pocketbert-corpus-lock/1", "pid": 999999999, "host": "gone"}\n')  # SIGKILLed run
    done = corpus_run(paths, tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    lock.write_text("my notes\n")
    refused = corpus_run(paths, tmp_path, "--overwrite")
    check_output(refused.stdout + refused.stderr, refused.returncode,
                 Case("foreign-lock", [], 2, ["out.jsonl.lock", "not a lock of this program"]))
    assert lock.read_text() == "my notes\n"


def test_corpus_overwrite_keeps_a_file_it_did_not_write(paths, tmp_path):
    (tmp_path / "out.jsonl").write_text("precious\n")
    replaced = corpus_run(paths, tmp_path, "--overwrite")
    check_output(replaced.stdout + replaced.stderr, replaced.returncode, Case("keep-foreign", [], 0, ["kept:"]))
    assert (tmp_path / "out.jsonl.replaced-1").read_text() == "precious\n"
    again = corpus_run(paths, tmp_path, "--overwrite")  # its own output: replaced, nothing more kept
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl", "out.jsonl.replaced-1"]
