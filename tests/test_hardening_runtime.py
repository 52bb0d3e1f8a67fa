"""Hostile input against the runtime, the cut and corpus runs: each case is refused with the problem and the
fix (or answered right), never with a traceback or a silently wrong answer.

Bundles: the runtime tests' shared tiny bundles (no conversion of its own).
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert import runtime
from pocketbert.converter import cli
from pocketbert.converter.errors import EXIT_INPUT
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.cli import main as run_main
from pocketbert.runtime.contract import bundle_input_length
from pocketbert.runtime.errors import BundleError, ModelError

from .runtime.conftest import cls_bundle, ner_bundle  # noqa: F401  (session fixtures: small real bundles)


def copy_of(bundle: Path, tmp_path: Path, edit=None, name: str = "copy") -> Path:
    """A copy of ``bundle`` whose manifest ``edit(manifest)`` may change (no checksum covers the manifest)."""
    copy = shutil.copytree(bundle, tmp_path / name, symlinks=True)
    if edit is not None:
        data = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
        edit(data)
        (copy / "manifest.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return copy


def pin(bundle: Path) -> str:
    return hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()


# --- the manifest must agree with the bundle's files -----------------------------------------------

def reversed_labels(data):
    data["labels"] = data["labels"][::-1]


def larger_vocabulary(data):
    data["tokenizer"]["vocab_size"] += 1


def longer_rows(data):
    data["max_sequence_length"] = 4096


def other_buckets(data):  # the ONNX file would then be fed 64-token rows: not what it was verified at
    for a in data["artifacts"]:
        if a["backend"] == "tflite":
            a["details"]["buckets"] = [64]
            a["details"]["signatures"] = ["seq_64"]


def repeated_input(data):
    data["inputs"] = [data["inputs"][0], *data["inputs"]]


DISAGREEMENTS = {
    "labels reversed": (reversed_labels, "disagree with labels.txt"),
    "vocabulary size": (larger_vocabulary, "vocab.txt holds"),
    "max_sequence_length": (longer_rows, "'tokenizer.max_sequence_length' is"),
    "buckets": (other_buckets, "verified at 128 tokens"),
    "inputs": (repeated_input, "each once"),
}


@pytest.mark.parametrize("pinned", [False, True], ids=["no pin", "pinned"])
@pytest.mark.parametrize("case", list(DISAGREEMENTS))
def test_a_manifest_that_disagrees_with_its_files_is_refused(case, pinned, ner_bundle, tmp_path):
    edit, message = DISAGREEMENTS[case]
    bundle = copy_of(ner_bundle, tmp_path, edit)
    with pytest.raises(BundleError, match="disagree|holds|is|verified|once") as caught:
        runtime.load(bundle, backend="onnx", expected_sha256=pin(bundle) if pinned else None)
    assert message in caught.value.problem, caught.value.problem
    assert "copy the bundle again" in caught.value.fix and "convert" in caught.value.fix


def test_reversed_labels_are_refused_in_a_classifier_too(cls_bundle, tmp_path):
    bundle = copy_of(cls_bundle, tmp_path, reversed_labels)
    with pytest.raises(BundleError, match="disagree with labels.txt"):
        Bundle.open(bundle)
    assert runtime.load(cls_bundle).labels == Bundle.open(cls_bundle).labels  # the untouched one still loads


def test_an_edited_labels_file_is_refused_by_its_checksum(cls_bundle, tmp_path):
    bundle = copy_of(cls_bundle, tmp_path)
    labels = (bundle / "labels.txt").read_text(encoding="utf-8").splitlines()
    (bundle / "labels.txt").write_text("".join(f"{x}\n" for x in labels[::-1]), encoding="utf-8")
    with pytest.raises(BundleError, match="labels.txt is corrupt"):
        runtime.load(bundle)


# --- the cut verifies its source as the runtime does ------------------------------------------------

@pytest.mark.parametrize("edit", [longer_rows, reversed_labels], ids=["max_sequence_length 4096", "labels reversed"])
def test_cut_refuses_a_source_the_runtime_would_refuse(edit, cls_bundle, tmp_path, capsys):
    source = copy_of(cls_bundle, tmp_path, edit)
    with pytest.raises(BundleError):
        runtime.load(source)
    out = tmp_path / "phone"
    assert cli.main(["cut", str(source), "--target", "phone", "--out", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "Traceback" not in err and "copy the bundle again" in err, err
    assert "pin" not in err.split("fix:")[0].lower() and not out.exists()


# --- a listed file that is a link out of the folder ---------------------------------------------------

def test_a_listed_file_linking_out_of_the_folder_is_named_as_such(cls_bundle, tmp_path, capsys):
    """--overwrite replaces only what PocketBERT wrote: a listed vocab.txt that is a link elsewhere is refused
    as exactly that, not as a stray file."""
    out = copy_of(cls_bundle, tmp_path, name="phone")
    elsewhere = tmp_path / "elsewhere" / "vocab.txt"
    elsewhere.parent.mkdir()
    shutil.move(out / "vocab.txt", elsewhere)
    (out / "vocab.txt").symlink_to(elsewhere)
    code = cli.main(["cut", str(cls_bundle), "--target", "phone", "--out", str(out), "--overwrite"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert f"'vocab.txt' is a link out of the bundle folder (to {str(elsewhere)!r})" in err, err
    assert "besides the bundle" not in err
    assert elsewhere.is_file() and (out / "vocab.txt").is_symlink()  # nothing of the user's touched


# --- corpus runs: JSON Lines ----------------------------------------------------------------------------

def corpus(*args):
    return CliRunner().invoke(run_main, [str(a) for a in args], catch_exceptions=False)


def test_a_jsonl_row_with_a_key_twice_is_a_bad_row(cls_bundle, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "text": "fine"}\n{"id": 2, "text": "a dull film", "text": "a great film"}\n'
                      '{"id": 3, "text": "ok", "meta": {"k": 1, "k": 2}}\n{"id": 4, "text": "last"}\n',
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    stopped = corpus(cls_bundle, "--input", source, "--output", out)
    assert stopped.exit_code == 5 and "Traceback" not in stopped.output
    assert "line 2: " in stopped.output and "'text' more than once" in stopped.output, stopped.output
    assert "--skip-bad" in stopped.output and not out.exists()
    skipped = corpus(cls_bundle, "--input", source, "--output", out, "--skip-bad", "--resume")
    assert skipped.exit_code == 0, skipped.output
    assert "line 3: " in skipped.output and "'k' more than once" in skipped.output, skipped.output
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == [1, 4]


def test_a_jsonl_byte_order_mark_is_kept_byte_for_byte(cls_bundle, tmp_path):
    lines = [b'{"id": 1, "text": "a charming film"}', b'{"id": 2, "text": "dull"}']
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    done = corpus(cls_bundle, "--input", source, "--output", out)
    assert done.exit_code == 0, done.output
    written = out.read_bytes().split(b"\n")
    assert written[0].startswith(b"\xef\xbb\xbf" + lines[0][:-1] + b", ")
    assert written[1].startswith(lines[1][:-1] + b", ") and written[2] == b""
    assert json.loads(written[0].decode("utf-8-sig"))["id"] == 1


# --- corpus runs: CSV and TSV ------------------------------------------------------------------------------

def test_a_csv_quote_closed_lines_later_by_a_stray_quote_is_a_bad_row_of_its_first_line(cls_bundle, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text('id,text\n1,good\n2,"opened\n3,swallowed\n4,a stray " quote\n5,fine\n', encoding="utf-8")
    out = tmp_path / "out.csv"
    stopped = corpus(cls_bundle, "--input", source, "--output", out)
    flat = " ".join(stopped.output.split())
    assert stopped.exit_code == 5 and "Traceback" not in stopped.output, stopped.output
    assert "line 3: a quoted field opened on this line ends at a quote on line 5" in flat, flat
    assert "--skip-bad" in flat and not out.exists()
    skipped = corpus(cls_bundle, "--input", source, "--output", out, "--skip-bad", "--overwrite")
    assert skipped.exit_code == 0, skipped.output
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert [(r["id"], r["text"]) for r in rows] == [("1", "good"), ("3", "swallowed"), ("4", 'a stray " quote'),
                                                    ("5", "fine")]


@pytest.mark.parametrize("kind, header", [("csv", "id,text,text"), ("tsv", "text\tid\ttext")])
def test_a_header_naming_a_column_twice_is_refused(kind, header, cls_bundle, tmp_path):
    source = tmp_path / f"in.{kind}"
    sep = "," if kind == "csv" else "\t"
    source.write_text(header + "\n" + sep.join(["a fine film", "1", "dull"]) + "\n", encoding="utf-8")
    result = corpus(cls_bundle, "--input", source, "--output", tmp_path / f"out.{kind}")
    assert result.exit_code == 5 and "the header names the column 'text' twice" in result.output, result.output
    assert "its own name" in result.output and not (tmp_path / f"out.{kind}").exists()


# --- options the bundle's task does not read ---------------------------------------------------------------

@pytest.mark.parametrize("which, args, needle", [
    ("cls", ["--aggregation", "first"], "--aggregation applies to ner bundles only"),
    ("cls", ["--stride", "8"], "--stride applies to ner bundles only"),
    ("ner", ["--top-k", "2"], "--top-k applies to classification bundles only"),
    ("ner", ["--top-k", "2", "--input", "{in}", "--output", "{out}"], "--top-k applies to classification"),
])
def test_an_option_the_bundles_task_ignores_is_refused(which, args, needle, cls_bundle, ner_bundle, tmp_path):
    source = write_input(tmp_path / "in.jsonl", ["Jeff Dean works at Google."])
    args = [a.format(**{"in": source, "out": tmp_path / "out.jsonl"}) for a in args]
    bundle = cls_bundle if which == "cls" else ner_bundle
    result = corpus(bundle, *([] if "--input" in args else ["a text"]), *args)
    assert result.exit_code == 2 and needle in " ".join(result.output.split()), result.output
    assert "would change nothing" in result.output and not (tmp_path / "out.jsonl").exists()
    kept = corpus(bundle, "a text", *(["--aggregation", "first"] if which == "ner" else ["--top-k", "2"]))
    assert kept.exit_code == 0, kept.output  # the task's own options still pass


# --- corpus runs: a read-only or full disk under --output --------------------------------------------

@pytest.fixture
def mount(tmp_path):
    """mount(options) -> a fresh tmpfs folder mounted with ``options`` (unmounted afterwards); tests run as root."""
    mounted = []

    def make(options: str) -> Path:
        folder = tmp_path / f"mnt{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(folder)
        return folder

    yield make
    for folder in reversed(mounted):
        subprocess.run(["umount", str(folder)], check=False)


def sentences(count: int) -> list[str]:
    return [f"Review {i}: a {'charming' if i % 2 else 'dull'} film, {'well' if i % 3 else 'badly'} acted."
            for i in range(count)]


def write_input(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path


def test_a_read_only_output_folder_is_a_clear_error(cls_bundle, tmp_path, mount):
    source = write_input(tmp_path / "in.jsonl", sentences(20))
    folder = mount("ro,size=64k")
    result = corpus(cls_bundle, "--input", source, "--output", folder / "out.jsonl")
    assert result.exit_code == 5, result.output
    assert "Traceback" not in result.output and "Read-only file system" in result.output, result.output
    assert "fix:" in result.output and "--output in a folder you may write to" in result.output
    assert list(folder.iterdir()) == []


def test_a_full_disk_is_a_clear_error_and_resume_completes_byte_for_byte(cls_bundle, tmp_path, mount):
    texts = sentences(3000)  # about 300 kB of results: more than the disk holds
    source = write_input(tmp_path / "in.jsonl", texts)
    whole = tmp_path / "whole.jsonl"
    assert corpus(cls_bundle, "--input", source, "--output", whole, "--chunk-rows", "256").exit_code == 0
    folder = mount("size=128k")
    out = folder / "out.jsonl"
    full = corpus(cls_bundle, "--input", source, "--output", out, "--chunk-rows", "256")
    assert full.exit_code == 5, full.output
    assert "Traceback" not in full.output and "is full (No space left on device)" in full.output, full.output
    assert "free some space" in full.output and "--resume" in full.output
    record = json.loads((folder / "out.jsonl.partial.progress.json").read_text(encoding="utf-8"))
    assert 0 < record["rows_read"] < len(texts) and f"the {record['rows_read']} rows done are kept" in full.output
    assert (folder / "out.jsonl.partial").stat().st_size >= record["output_bytes"] > 0
    assert not out.exists() and not (folder / "out.jsonl.lock").exists()
    subprocess.run(["mount", "-o", "remount,size=4m", str(folder)], check=True)
    resumed = corpus(cls_bundle, "--input", source, "--output", out, "--chunk-rows", "256", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert out.read_bytes() == whole.read_bytes()


# --- the Android core applies the same rules ------------------------------------------------------------

PROBE = """
import java.nio.file.Paths;
import pocketbert.core.BundleException;
import pocketbert.core.bundle.BundleDirectory;

public class Probe {
    public static void main(String[] args) {
        for (String dir : args) {
            try {
                BundleDirectory.open(Paths.get(dir));
                System.out.println("opened");
            } catch (BundleException e) {
                System.out.println("refused: " + e.problem() + " | fix: " + e.fix());
            }
        }
    }
}
"""


@pytest.fixture(scope="module")
def java_core(tmp_path_factory) -> Path:
    """The Android core's main sources compiled (what run_tests.sh compiles first)."""
    classes = tmp_path_factory.mktemp("android-core-classes")
    sources = [str(p) for p in (Path(__file__).resolve().parents[1] / "android_demo" / "core" / "src" / "main" /
                                "java").rglob("*.java")]
    subprocess.run(["javac", "--release", "11", "-encoding", "UTF-8", "-d", str(classes), *sources], check=True)
    (classes.parent / "Probe.java").write_text(PROBE, encoding="utf-8")
    return classes


@pytest.mark.parametrize("case", ["labels reversed", "vocabulary size", "max_sequence_length", "buckets", "inputs"])
def test_the_android_core_refuses_what_the_runtime_refuses(case, java_core, ner_bundle, tmp_path):
    edit, message = DISAGREEMENTS[case]
    edited = copy_of(ner_bundle, tmp_path, edit)
    done = subprocess.run(["java", "-cp", str(java_core), str(java_core.parent / "Probe.java"), str(ner_bundle),
                           str(edited)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    untouched, refused = done.stdout.splitlines()
    assert untouched == "opened"
    assert refused.startswith("refused: manifest.json: ") and message in refused, refused
    assert "copy the bundle again" in refused.split("| fix:")[1]


def test_cut_refuses_a_model_file_that_is_not_the_one_its_manifest_describes(cls_bundle, tmp_path, capsys):
    """The manifest agrees with itself (buckets, signatures, verified length), the TFLite file does not."""
    def fewer_buckets(data):
        for a in data["artifacts"]:
            if a["backend"] == "tflite":
                a["details"]["buckets"] = [8]
                a["details"]["signatures"] = ["seq_8"]
        data["verification"]["max_length"] = bundle_input_length(data)
    source = copy_of(cls_bundle, tmp_path, fewer_buckets)
    Bundle.open(source)  # nothing in the manifest alone gives it away
    with pytest.raises(ModelError, match="has buckets"):
        runtime.load(source, backend="tflite")
    out = tmp_path / "phone"
    assert cli.main(["cut", str(source), "--target", "phone", "--out", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "does not verify" in err and "has buckets" in err and "but the manifest lists [8]" in err, err
    assert "Traceback" not in err and not out.exists()
