"""A bundle is a security boundary: the runtime reads only files inside the bundle directory, only files its
manifest lists with their SHA-256, and refuses a manifest whose fields are out of type or range.  A pinned
bundle (``expected_sha256=``) is refused unless its manifest.json is byte for byte the pinned one.

Each test tampers with a copy of a real converted bundle, the way a hostile download would.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert import runtime
from pocketbert.converter import cli as converter_cli
from pocketbert.runtime.cli import main as runtime_cli
from pocketbert.runtime.errors import BundleError

from .test_bundles import edit_manifest, relist


def manifest_sha256(bundle: Path) -> str:
    return hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()


def list_file(bundle: Path, name: str, path: Path) -> None:
    """Record ``path``'s size and SHA-256 under ``name``: a hostile manifest lists whatever it points at."""
    data = path.read_bytes()
    edit_manifest(bundle, lambda m: m["files"].__setitem__(
        name, {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))


@pytest.fixture
def bundle(ner_bundle, tmp_path) -> Path:
    """A copy of the NER bundle in tmp_path/bundle, beside tmp_path/outside (a directory the bundle must not reach)."""
    (tmp_path / "outside").mkdir()
    return Path(shutil.copytree(ner_bundle, tmp_path / "bundle"))


def set_artifact_file(bundle: Path, recipe: str, name: str) -> None:
    def change(m):
        next(a for a in m["artifacts"] if a["recipe"] == recipe)["file"] = name
    edit_manifest(bundle, change)


# --- paths: nothing outside the bundle directory -------------------------------------------------------

@pytest.mark.parametrize("how", ["dotdot", "absolute"])
def test_artifact_file_outside_the_bundle_is_refused(bundle, tmp_path, how):
    evil = tmp_path / "outside" / "evil.onnx"
    shutil.copy(bundle / "model.onnx", evil)
    name = "../outside/evil.onnx" if how == "dotdot" else str(evil)
    set_artifact_file(bundle, "onnx:fp32", name)
    list_file(bundle, name, evil)
    with pytest.raises(BundleError, match=r"artifacts\[0\]\.file") as info:
        runtime.load(bundle, backend="onnx")
    assert repr(name) in info.value.problem
    assert ("'..'" if how == "dotdot" else "absolute") in info.value.problem
    assert "inside the bundle" in info.value.fix


def test_tokenizer_file_outside_the_bundle_is_refused(bundle, tmp_path):
    outside = tmp_path / "outside" / "tokenizer.json"
    shutil.copy(bundle / "tokenizer.json", outside)
    edit_manifest(bundle, lambda m: m["tokenizer"].__setitem__("tokenizer_file", "../outside/tokenizer.json"))
    list_file(bundle, "../outside/tokenizer.json", outside)
    with pytest.raises(BundleError, match=r"tokenizer\.tokenizer_file '\.\./outside/tokenizer\.json'"):
        runtime.load(bundle)


def test_model_symlinked_to_an_outside_file_is_refused(bundle, tmp_path):
    outside = tmp_path / "outside" / "model.onnx"
    (bundle / "model.onnx").rename(outside)  # identical bytes: the manifest's SHA-256 alone cannot tell
    (bundle / "model.onnx").symlink_to(outside)
    with pytest.raises(BundleError, match="model.onnx.* symbolic link .*outside the bundle") as info:
        runtime.load(bundle, backend="onnx")
    assert str(outside) in info.value.problem


def test_tokenizer_symlinked_to_etc_passwd_is_never_opened(bundle):
    passwd = Path("/etc/passwd")
    (bundle / "tokenizer.json").unlink()
    (bundle / "tokenizer.json").symlink_to(passwd)
    list_file(bundle, "tokenizer.json", passwd)  # even a manifest that vouches for it
    with pytest.raises(BundleError, match="tokenizer.json.* symbolic link .*outside the bundle") as info:
        runtime.load(bundle)
    assert "root:" not in str(info.value)  # no line of the file leaks into the message


def test_manifest_symlinked_outside_is_refused(bundle, tmp_path):
    outside = tmp_path / "outside" / "manifest.json"
    (bundle / "manifest.json").rename(outside)
    (bundle / "manifest.json").symlink_to(outside)
    with pytest.raises(BundleError, match="manifest.json.* symbolic link .*outside the bundle"):
        runtime.load(bundle)


def test_unused_listed_file_outside_is_refused_too(bundle, tmp_path):
    """Every path the manifest names is checked when the bundle is opened, not only the ones this load reads."""
    edit_manifest(bundle, lambda m: m["files"].__setitem__("../../x", {"bytes": 1, "sha256": "0" * 64}))
    with pytest.raises(BundleError, match=r"files key '\.\./\.\./x' is not a path inside the bundle"):
        runtime.Bundle.open(bundle)
    edit_manifest(bundle, lambda m: m["files"].pop("../../x"))
    (tmp_path / "outside" / "secret").write_text("s")
    (bundle / "labels.txt").unlink()
    (bundle / "labels.txt").symlink_to(tmp_path / "outside" / "secret")
    with pytest.raises(BundleError, match="files key 'labels.txt'.* outside the bundle"):
        runtime.Bundle.open(bundle)


def test_symlinks_that_stay_inside_are_allowed(bundle, tmp_path):
    (bundle / "store").mkdir()
    (bundle / "model.onnx").rename(bundle / "store" / "model.onnx")
    (bundle / "model.onnx").symlink_to(Path("store") / "model.onnx")
    link = tmp_path / "latest"
    link.symlink_to(bundle, target_is_directory=True)  # a link to the bundle directory itself
    pipe = runtime.load(link, backend="onnx", precision="fp32")
    assert pipe.artifact.path == (bundle / "store" / "model.onnx").resolve()
    assert pipe(["Peter lives in Berlin"])  # runs


def test_oversized_manifest_is_not_read_whole(bundle):
    with open(bundle / "manifest.json", "r+b") as f:
        f.truncate(17 << 20)  # sparse: nothing is written
    with pytest.raises(BundleError, match="manifest.json is 17825792 bytes; a bundle's manifest is a few kilobytes"):
        runtime.load(bundle)


def test_unlisted_file_is_not_read(bundle):
    edit_manifest(bundle, lambda m: m["files"].pop("tokenizer.json"))
    with pytest.raises(BundleError, match="tokenizer.json is not listed in the manifest's files"):
        runtime.load(bundle)


# --- manifest fields: types and ranges -----------------------------------------------------------------

@pytest.mark.parametrize("value, shown", [("1", "'1'"), (-1, "-1"), (0, "0"), (True, "True"), (1.0, "1.0"),
                                          (None, "None")])
def test_schema_version_must_be_a_positive_integer(bundle, value, shown):
    edit_manifest(bundle, lambda m: m.__setitem__("schema_version", value))
    with pytest.raises(BundleError, match="'schema_version' must be a positive integer") as info:
        runtime.load(bundle)
    assert f"not {shown}" in info.value.problem and "newer" not in info.value.problem


def test_missing_schema_version_is_refused(bundle):
    edit_manifest(bundle, lambda m: m.pop("schema_version"))
    with pytest.raises(BundleError, match="'schema_version' is missing"):
        runtime.load(bundle)


@pytest.mark.parametrize("value", [10 ** 12, 1e12, 65537, 1, "512", True])
def test_max_sequence_length_out_of_range(bundle, value):
    edit_manifest(bundle, lambda m: m.__setitem__("max_sequence_length", value))
    with pytest.raises(BundleError, match="'max_sequence_length' must be an integer from 2 to 65536") as info:
        runtime.load(bundle)
    assert f"not {value!r}" in info.value.problem
    assert info.value.fix


@pytest.mark.parametrize("change, message", [
    (lambda m: m.__setitem__("labels", ["O", 3]), "'labels' must be a non-empty list of strings"),
    (lambda m: m.__setitem__("task", "summarization"),
     "'task' must be one of classification, ner, not 'summarization'"),
    (lambda m: m.__setitem__("problem_type", "ranking"), "'problem_type' must be one of"),
    (lambda m: m["files"]["model.onnx"].__setitem__("bytes", "123"), r"'files\['model.onnx'\].bytes' must be"),
    (lambda m: m["files"]["model.onnx"].__setitem__("bytes", -5), r"'files\['model.onnx'\].bytes' must be"),
    (lambda m: m["files"]["model.onnx"].__setitem__("sha256", "abc"), r"'files\['model.onnx'\].sha256' must be 64"),
    (lambda m: m["files"].__setitem__("model.onnx", "yes"), r"'files\['model.onnx'\]' must be an object"),
    (lambda m: m["tokenizer"].__setitem__("vocab_size", "30522"), "'tokenizer.vocab_size' must be"),
    (lambda m: m["tokenizer"]["special_tokens"]["pad"].__setitem__("id", "0"), r"'tokenizer.special_tokens"),
    (lambda m: m.__setitem__("notes", "a note"), "'notes' must be a list of strings"),
    (lambda m: m["artifacts"][0].__setitem__("verification", []), r"'artifacts\[0\].verification' must be"),
    (lambda m: m["artifacts"][0].__setitem__("file", ""), r"artifacts\[0\].file '' is not"),
])
def test_mistyped_fields_name_the_field_and_value(bundle, change, message):
    edit_manifest(bundle, change)
    with pytest.raises(BundleError, match=message) as info:
        runtime.load(bundle)
    assert info.value.fix


def test_load_without_a_directory_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"the bundle directory must be a path \(str or os.PathLike\), not None"):
        runtime.load(None)
    with pytest.raises(TypeError, match="not int"):
        runtime.Bundle.open(3)


# --- pinning -------------------------------------------------------------------------------------------

def test_pinned_bundle_loads_only_when_it_is_the_pinned_one(bundle):
    pin = manifest_sha256(bundle)
    assert runtime.load(bundle, expected_sha256=pin).artifact.recipe == "onnx:fp32"
    assert runtime.load(bundle, expected_sha256=pin.upper()).artifact.recipe == "onnx:fp32"
    # a changed manifest (here: a note added, consistent with its files) is no longer the pinned bundle
    edit_manifest(bundle, lambda m: m.__setitem__("notes", [*(m.get("notes") or []), "edited"]))
    runtime.load(bundle)  # unpinned, it still loads: the checksums only protect against accidents
    with pytest.raises(BundleError, match="is not the one pinned") as info:
        runtime.load(bundle, expected_sha256=pin)
    assert pin in info.value.problem and manifest_sha256(bundle) in info.value.problem


def test_pin_covers_every_file_read(bundle):
    """A file changed together with its manifest entry passes an unpinned load, but not a pinned one; a file
    changed without its entry fails both ways (the SHA-256 check is not skipped when pinned)."""
    pin = manifest_sha256(bundle)
    data = json.loads((bundle / "tokenizer.json").read_text(encoding="utf-8"))
    (bundle / "tokenizer.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    with pytest.raises(BundleError, match="tokenizer.json is corrupt"):
        runtime.load(bundle, expected_sha256=pin)
    relist(bundle, "tokenizer.json")
    runtime.load(bundle)
    with pytest.raises(BundleError, match="is not the one pinned"):
        runtime.load(bundle, expected_sha256=pin)


def test_pin_misuse(bundle):
    with pytest.raises(ValueError, match="64 hexadecimal digits"):
        runtime.load(bundle, expected_sha256="abc")
    with pytest.raises(TypeError, match="expected_sha256 must be a str"):
        runtime.load(bundle, expected_sha256=b"0" * 64)
    with pytest.raises(ValueError, match="verify=False"):
        runtime.load(bundle, expected_sha256=manifest_sha256(bundle), verify=False)


def test_cli_expect_sha256(bundle):
    pin = manifest_sha256(bundle)
    ok = CliRunner().invoke(runtime_cli, [str(bundle), "Peter", "--expect-sha256", pin])
    assert ok.exit_code == 0, ok.output
    wrong = CliRunner().invoke(runtime_cli, [str(bundle), "Peter", "--expect-sha256", "0" * 64])
    assert wrong.exit_code == 3 and "is not the one pinned" in wrong.stderr
    malformed = CliRunner().invoke(runtime_cli, [str(bundle), "Peter", "--expect-sha256", "xyz"])
    assert malformed.exit_code == 2 and "64 hexadecimal digits" in malformed.stderr
    both = CliRunner().invoke(runtime_cli, [str(bundle), "Peter", "--expect-sha256", pin, "--no-verify"])
    assert both.exit_code == 2 and "--no-verify" in both.stderr


def test_converter_prints_the_pin(checkpoints, tmp_path, capsys):
    out = tmp_path / "fresh"
    code = converter_cli.main([str(checkpoints["distilbert"]["classification"]), "--out", str(out), "--format", "onnx",
                               "--verify-samples", "20", "--no-latency", "--data-dir", str(tmp_path)])
    assert code == 0
    printed = " ".join(capsys.readouterr().out.split())  # the console may wrap the line
    pin = manifest_sha256(out)
    assert f"bundle pin: sha256 {pin} (runtime.load(dir, expected_sha256=...)" in printed
    assert runtime.load(out, expected_sha256=pin).task == "classification"


def test_symlink_loop_is_a_bundle_error(bundle):
    (bundle / "model.onnx").unlink()
    os.symlink("model.onnx", bundle / "model.onnx")
    with pytest.raises(BundleError, match="model.onnx"):
        runtime.load(bundle, backend="onnx")
