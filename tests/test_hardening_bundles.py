"""A manifest readers could take two ways (a key given twice) or Python cannot parse (an integer of thousands of
digits) is a clear refusal in every command.  Each case edits a copy of a session bundle; ``cut`` must refuse the
same sources rather than write them out with a fresh pin.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert import runtime
from pocketbert.benchmarks.cli import cli as bench_cli
from pocketbert.converter import cli
from pocketbert.converter.errors import EXIT_INPUT
from pocketbert.runtime.cli import main as run_main
from pocketbert.runtime.errors import BundleError

from .runtime.conftest import cls_bundle  # noqa: F401  (session fixtures: small real bundles)


def copy_of(bundle: Path, tmp_path: Path, edit=None, files: dict[str, bytes] | None = None) -> Path:
    """A copy whose manifest ``edit(manifest)`` changes and whose ``files`` are replaced, each re-listed with its
    new size and SHA-256 (the checksums then pass: only the consistency rules can tell)."""
    copy = Path(shutil.copytree(bundle, tmp_path / "copy"))
    data = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for name, content in (files or {}).items():
        (copy / name).write_bytes(content)
        data["files"][name] = {"bytes": len(content), "sha256": hashlib.sha256(content).hexdigest()}
    if edit is not None:
        edit(data)
    (copy / "manifest.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return copy


def refused_everywhere(bundle: Path, tmp_path: Path, capsys, needle: str, error=BundleError) -> None:
    """runtime.load refuses ``bundle`` naming ``needle``, and cut writes nothing from it."""
    with pytest.raises(error) as caught:
        runtime.load(bundle, recipe="tflite:fp32")
    assert needle in caught.value.problem, caught.value.problem
    assert "convert" in caught.value.fix
    out = tmp_path / "phone"
    assert cli.main(["cut", str(bundle), "--target", "phone", "--out", str(out)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert needle in " ".join(err.split()) and "Traceback" not in err and not out.exists(), err


# --- manifests a reader cannot take one way -----------------------------------------------------------------

def test_a_key_given_twice_is_refused(cls_bundle, tmp_path, capsys):
    bundle = copy_of(cls_bundle, tmp_path)
    text = (bundle / "manifest.json").read_text(encoding="utf-8")
    (bundle / "manifest.json").write_text(text.replace('"labels": [', '"labels": ["a", "b", "c"], "labels": [', 1),
                                          encoding="utf-8")
    refused_everywhere(bundle, tmp_path, capsys, "gives the key 'labels' twice")


def test_an_integer_of_5000_digits_is_a_clear_refusal_in_every_command(cls_bundle, tmp_path, capsys):
    bundle = copy_of(cls_bundle, tmp_path)
    text = (bundle / "manifest.json").read_text(encoding="utf-8")
    (bundle / "manifest.json").write_text(text.replace('"created":', f'"stage_count": {"7" * 5000}, "created":', 1),
                                          encoding="utf-8")
    needle = "holds an integer of more than 4300 digits"
    refused_everywhere(bundle, tmp_path, capsys, needle)
    result = CliRunner().invoke(run_main, [str(bundle), "a text"])
    assert result.exit_code == 3 and needle in " ".join(result.output.split()), result.output
    for command in (["gates"], ["accuracy", "--task", "glue:sst2"], ["latency", "--out", str(tmp_path / "lat.json"), "--work-dir", str(tmp_path / "w")]):
        result = CliRunner().invoke(bench_cli, [command[0], str(bundle), *command[1:]])
        assert result.exit_code != 0 and needle in " ".join(result.output.split()), (command, result.output)
        assert "Traceback" not in result.output and not isinstance(result.exception, ValueError), result.output
