"""``python -m converter cut``: a bundle holding only what one target runs.

Cut from the runtime tests' shared bundles (no conversion here): the DistilBERT classifier (ONNX and
TFLite, fp32 and int8-dynamic) and the BERT NER bundle (ONNX and TFLite fp32).  What is kept, that the
cut bundle opens, verifies and answers as the source did with the kept artifact, that the source is never
written, the refusals, and what --overwrite may replace.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from pocketbert import runtime
from pocketbert.converter import cli
from pocketbert.converter.output.cut import cut
from pocketbert.converter.errors import EXIT_INPUT, EXIT_OK, EXIT_OUTPUT, ConverterInputError
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.contract import subset_manifest

from .runtime.conftest import cls_bundle, ner_bundle  # noqa: F401  (session fixtures: small real bundles)

TEXTS = ["A gripping, beautifully acted film.", "Dull and far too long.", "Jeff Dean works at Google.",
         " ".join(["The committee met in Geneva on Tuesday to discuss the budget."] * 30)]
CHANGED_BY_A_CUT = {"artifacts", "files", "cut"}


def snapshot(directory: Path) -> dict:
    """Every entry of ``directory``: content hash, mode and modification time (a write changes one of them)."""
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir", p.stat().st_mode,
                     p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


def copy_of(bundle: Path, tmp_path: Path, edit=None) -> Path:
    """A copy of ``bundle`` whose manifest ``edit(manifest)`` may change (no checksum covers the manifest)."""
    copy = shutil.copytree(bundle, tmp_path / f"copy-{bundle.name}")
    if edit is not None:
        data = manifest(copy)
        edit(data)
        (copy / "manifest.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return copy


def run(*args) -> int:
    return cli.main(["cut", *map(str, args)])


def answers(bundle: Path, recipe: str) -> list:
    return runtime.load(bundle, recipe=recipe)(TEXTS)


def assert_cut_of(out: Path, source: Path, files: set[str], recipes: list[str], also_changed=()) -> Bundle:
    """``out`` holds exactly ``files``, opens and verifies, lists ``recipes`` and keeps every other field
    (but ``also_changed``)."""
    assert {p.name for p in out.iterdir()} == files | {"manifest.json"}
    bundle = Bundle.open(out)
    for name in bundle.manifest["files"]:
        bundle.file(name)  # size and SHA-256
    assert set(bundle.manifest["files"]) == files
    assert [a.recipe for a in bundle.artifacts] == recipes
    before, after = manifest(source), bundle.manifest
    changed = CHANGED_BY_A_CUT | set(also_changed)
    assert {k: v for k, v in after.items() if k not in changed} == {k: v for k, v in before.items() if k not in changed}
    assert after["artifacts"] == [a for a in before["artifacts"] if a["recipe"] in recipes]
    assert after["cut"]["from_sha256"] == hashlib.sha256((source / "manifest.json").read_bytes()).hexdigest()
    assert bundle.input_length == Bundle.open(source).input_length
    return bundle


# --- what each target keeps ----------------------------------------------------------------------

def test_phone_keeps_the_model_the_app_would_choose_and_answers_as_the_source(cls_bundle, tmp_path, capsys):
    before = snapshot(cls_bundle)
    out = tmp_path / "phone"
    assert run(cls_bundle, "--target", "phone", "--out", out) == EXIT_OK
    printed = capsys.readouterr().out
    assert_cut_of(out, cls_bundle, {"tokenizer.json", "vocab.txt", "labels.txt", "model.int8-dynamic.tflite"},
                  ["tflite:int8-dynamic"])
    assert "kept tflite:int8-dynamic (model.int8-dynamic.tflite" in printed
    assert "dropped onnx:fp32, onnx:int8-dynamic, tflite:fp32" in printed
    total = sum(p.stat().st_size for p in cls_bundle.iterdir())
    assert f"size: {total / 1e6:.1f} MB -> " in printed
    pin = hashlib.sha256((out / "manifest.json").read_bytes()).hexdigest()
    assert f"bundle pin: sha256 {pin}" in printed
    assert runtime.load(out, expected_sha256=pin).info()["recipe"] == "tflite:int8-dynamic"
    assert answers(out, "tflite:int8-dynamic") == answers(cls_bundle, "tflite:int8-dynamic")
    assert snapshot(cls_bundle) == before, "the cut wrote the source bundle"


def test_web_never_keeps_int8_static_which_the_phone_prefers_to_fp32(cls_bundle, tmp_path):
    def relabel(data):  # a full-integer model, as --recipe tflite:int8-static builds it
        artifact = next(a for a in data["artifacts"] if a["recipe"] == "tflite:int8-dynamic")
        artifact.update(recipe="tflite:int8-static", precision="int8-static")
    source = copy_of(cls_bundle, tmp_path, relabel)
    phone = cut(source, "phone", tmp_path / "phone")
    web = cut(source, "web", tmp_path / "web")
    assert [a.recipe for a in phone.kept] == ["tflite:int8-static"]
    assert [a.recipe for a in web.kept] == ["tflite:fp32"]
    assert_cut_of(web.path, source, {"tokenizer.json", "vocab.txt", "labels.txt", "model.tflite"}, ["tflite:fp32"])
    assert answers(web.path, "tflite:fp32") == answers(cls_bundle, "tflite:fp32")


def test_desktop_keeps_every_verified_onnx_model_or_the_recipe_given(cls_bundle, tmp_path):
    before = snapshot(cls_bundle)
    result = cut(cls_bundle, "desktop", tmp_path / "desktop")
    assert_cut_of(result.path, cls_bundle, {"tokenizer.json", "model.onnx", "model.int8-dynamic.onnx"},
                  ["onnx:fp32", "onnx:int8-dynamic"])
    for recipe in ("onnx:fp32", "onnx:int8-dynamic"):
        assert answers(result.path, recipe) == answers(cls_bundle, recipe)
    one = cut(cls_bundle, "desktop", tmp_path / "one", recipe="onnx:int8-dynamic")
    assert_cut_of(one.path, cls_bundle, {"tokenizer.json", "model.int8-dynamic.onnx"}, ["onnx:int8-dynamic"])
    assert one.bytes_after < result.bytes_after < result.bytes_before
    assert snapshot(cls_bundle) == before


def test_desktop_keeps_the_input_length_the_tflite_buckets_set(ner_bundle, tmp_path):
    """Without the TFLite file whose largest bucket bounded the rows, the ONNX model would be fed longer rows
    (and cut NER windows elsewhere) than in the bundle it was verified in."""
    def lengthen(data):
        data["max_sequence_length"] = data["tokenizer"]["max_sequence_length"] = 512
    source = copy_of(ner_bundle, tmp_path, lengthen)
    assert Bundle.open(source).input_length == 128
    result = cut(source, "desktop", tmp_path / "desktop")
    bundle = assert_cut_of(result.path, source, {"tokenizer.json", "model.onnx"}, ["onnx:fp32"],
                           also_changed=("max_sequence_length", "tokenizer"))
    assert bundle.max_sequence_length == bundle.tokenizer_settings["max_sequence_length"] == 128
    assert {**bundle.tokenizer_settings, "max_sequence_length": 512} == manifest(source)["tokenizer"]
    assert answers(result.path, "onnx:fp32") == answers(source, "onnx:fp32")


def test_subset_manifest_raises_no_max_sequence_length_it_need_not():
    source = {"max_sequence_length": 64, "tokenizer": {"max_sequence_length": 64},
              "artifacts": [{"recipe": "onnx:fp32", "backend": "onnx"},
                            {"recipe": "tflite:fp32", "backend": "tflite", "details": {"buckets": [32, 128]}}],
              "files": {"a": 1, "b": 2}}
    out = subset_manifest(source, ["onnx:fp32"], ["a"], {"target": "desktop"})
    assert out["max_sequence_length"] == 64 and list(out) == ["max_sequence_length", "tokenizer", "artifacts", "cut",
                                                               "files"]
    assert out["files"] == {"a": 1} and source["files"] == {"a": 1, "b": 2}


# --- refusals ------------------------------------------------------------------------------------

def without_tflite(data):
    data["artifacts"] = [a for a in data["artifacts"] if a["backend"] != "tflite"]


def failed(recipe):
    def edit(data):
        next(a for a in data["artifacts"] if a["recipe"] == recipe)["verification"]["passed"] = False
    return edit


#: case -> (manifest edit, file to damage, command line, what the message says)
REFUSALS = {
    "no artifact for the target": (without_tflite, None, ["--target", "web"],
                                   ["needs a verified tflite artifact other than int8-static", "--format tflite"]),
    "recipe absent": (None, None, ["--target", "phone", "--recipe", "tflite:fp16"],
                      ["has no artifact 'tflite:fp16'", "tflite:int8-dynamic"]),
    "recipe failed verification": (failed("tflite:fp32"), None, ["--target", "phone", "--recipe", "tflite:fp32"],
                                   ["tflite:fp32", "failed verification", "choose a verified --recipe"]),
    "recipe of another backend": (None, None, ["--target", "phone", "--recipe", "onnx:fp32"],
                                  ["not a tflite artifact", "Android app"]),
    "source does not verify": (None, "model.onnx", ["--target", "phone"],
                               ["does not verify", "model.onnx is corrupt", "copy the bundle again"]),
    "a kept file unlisted": (lambda data: data["files"].pop("tokenizer.json"), None, ["--target", "desktop"],
                             ["does not verify", "tokenizer.json is not listed in the manifest's files"]),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_name_the_problem_and_the_fix_and_write_nothing(case, cls_bundle, tmp_path, capsys):
    edit, damaged, args, expected = REFUSALS[case]
    source = copy_of(cls_bundle, tmp_path, edit)
    if damaged:  # one flipped byte in a file the cut would drop: the copy is broken all the same
        data = bytearray((source / damaged).read_bytes())
        data[len(data) // 2] ^= 1
        (source / damaged).write_bytes(bytes(data))
    before = snapshot(source)
    out = tmp_path / "out"
    assert run(source, *args, "--out", out) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "Traceback" not in err, err
    for part in expected:
        assert part in err, (part, err)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert snapshot(source) == before


def test_the_page_cannot_run_int8_static(cls_bundle, tmp_path):
    def relabel(data):
        artifact = next(a for a in data["artifacts"] if a["recipe"] == "tflite:int8-dynamic")
        artifact.update(recipe="tflite:int8-static", precision="int8-static")
    source = copy_of(cls_bundle, tmp_path, relabel)
    with pytest.raises(ConverterInputError, match="cannot run tflite:int8-static") as caught:
        cut(source, "web", tmp_path / "out", recipe="tflite:int8-static")
    assert "--target phone" in caught.value.fix
    assert cut(source, "phone", tmp_path / "out", recipe="tflite:int8-static").kept[0].recipe == "tflite:int8-static"


def test_a_missing_or_foreign_source_is_refused(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    for source, expected in ((tmp_path / "nope", "does not exist"), (tmp_path / "folder", "has no manifest.json")):
        assert run(source, "--target", "phone", "--out", tmp_path / "out") == EXIT_INPUT
        err = capsys.readouterr().err
        assert expected in err and "fix:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


# --- --overwrite -------------------------------------------------------------------------------------

def test_overwrite_replaces_only_an_unchanged_bundle_and_never_the_source(cls_bundle, tmp_path, capsys):
    source_before = snapshot(cls_bundle)
    out = tmp_path / "out"
    assert run(cls_bundle, "--target", "phone", "--out", out) == EXIT_OK
    assert run(cls_bundle, "--target", "web", "--out", out) == EXIT_OUTPUT  # not empty, no --overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert run(cls_bundle, "--target", "web", "--recipe", "tflite:fp32", "--out", out, "--overwrite") == EXIT_OK
    assert_cut_of(out, cls_bundle, {"tokenizer.json", "vocab.txt", "labels.txt", "model.tflite"}, ["tflite:fp32"])

    (out / "notes.txt").write_text("mine")  # something PocketBERT did not write
    kept = snapshot(out)
    assert run(cls_bundle, "--target", "phone", "--out", out, "--overwrite") == EXIT_OUTPUT
    assert "besides the bundle it holds: 'notes.txt'" in capsys.readouterr().err and snapshot(out) == kept
    (out / "notes.txt").unlink()
    (out / "labels.txt").write_text("edited\n")  # changed since the cut wrote it
    kept = snapshot(out)
    assert run(cls_bundle, "--target", "phone", "--out", out, "--overwrite") == EXIT_OUTPUT
    assert "missing or changed" in capsys.readouterr().err and snapshot(out) == kept

    for where in (cls_bundle, cls_bundle / "phone"):  # the source itself, or a folder inside it
        assert run(cls_bundle, "--target", "phone", "--out", where, "--overwrite") == EXIT_OUTPUT
        err = capsys.readouterr().err
        assert "the source bundle" in err and "fix:" in err
    assert snapshot(cls_bundle) == source_before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "staging directories left behind"
    assert os.listdir(tmp_path) == ["out"]


def test_folders_beside_out_named_like_staging_are_the_users_and_stay(cls_bundle, tmp_path):
    """Only a folder this program marked (its pid and token inside) is staging; a name proves nothing."""
    import subprocess
    import sys

    from pocketbert.converter.output.leftovers import mark

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    users = [".out.old-999999", ".out.partial-999997-abc", ".out.ready-999998",
             f".out.old-{dead.pid}-0123456789abcdef", f".out.ready-{dead.pid}-fedcba9876543210"]
    for name in users:
        (tmp_path / name).mkdir()
        (tmp_path / name / "thesis.tex").write_text(f"only copy of {name}", encoding="utf-8")
    # a marker that does not repeat the name's token is no proof either
    mark(tmp_path / f".out.ready-{dead.pid}-fedcba9876543210", out, dead.pid, "0000000000000000")
    before = {name: snapshot(tmp_path / name) for name in users}
    stale = tmp_path / f".out.partial-{dead.pid}-00000000000000aa"  # a killed cut's own: removed
    stale.mkdir()
    mark(stale, out, dead.pid, "00000000000000aa")

    assert run(cls_bundle, "--target", "phone", "--out", out) == EXIT_OK
    assert manifest(out)["cut"]["target"] == "phone"
    assert {name: snapshot(tmp_path / name) for name in users} == before
    assert sorted(os.listdir(tmp_path)) == sorted(["out", *users])
