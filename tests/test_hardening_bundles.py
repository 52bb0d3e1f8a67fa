"""A bundle's manifest must tell the truth about its own files: the tokenizer fields against tokenizer.json (which the
Python runtime tokenizes with, while the Android and web readers use the manifest and vocab.txt), the labels against
those a TFLite file packs, and no key given twice.  A manifest Python cannot parse is a clear refusal in every command.
Each case edits a copy of a session bundle and re-pins what it touched, as a hostile user would; ``cut`` must refuse
the same sources rather than write them out with a fresh pin.
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
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.cli import main as run_main
from pocketbert.runtime.errors import BundleError, ModelError

from .runtime.conftest import cls_bundle, ner_bundle  # noqa: F401  (session fixtures: small real bundles)


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


# --- the tokenizer fields against tokenizer.json and vocab.txt ----------------------------------------------

def cls_id(data):
    data["tokenizer"]["special_tokens"]["cls"]["id"] = 1037  # an ordinary word's id: the page would feed it


def lower_case(data):
    data["tokenizer"]["do_lower_case"] = False
    for a in data["artifacts"]:
        if "metadata" in a["details"]:
            a["details"]["metadata"]["do_lower_case"] = False


TOKENIZER_EDITS = {
    "cls id": (cls_id, "'tokenizer.special_tokens.cls' is '[CLS]' with id 1037"),
    "do_lower_case": (lower_case, "'tokenizer.do_lower_case' is False but tokenizer.json says True"),
}


@pytest.mark.parametrize("case", list(TOKENIZER_EDITS))
def test_tokenizer_fields_that_disagree_with_tokenizer_json_are_refused(case, cls_bundle, tmp_path, capsys):
    edit, needle = TOKENIZER_EDITS[case]
    refused_everywhere(copy_of(cls_bundle, tmp_path, edit), tmp_path, capsys, needle)


def test_an_edited_vocab_txt_is_refused_though_relisted(cls_bundle, tmp_path, capsys):
    lines = (cls_bundle / "vocab.txt").read_text(encoding="utf-8").split("\n")
    good, bad = lines.index("good"), lines.index("bad")
    lines[good], lines[bad] = lines[bad], lines[good]  # the readers without tokenizer.json would swap the two
    bundle = copy_of(cls_bundle, tmp_path, files={"vocab.txt": "\n".join(lines).encode("utf-8")})
    refused_everywhere(bundle, tmp_path, capsys, f"vocab.txt disagrees with tokenizer.json at line {min(good, bad) + 1}")


def test_problem_type_must_fit_the_task_and_the_training_record(cls_bundle, ner_bundle, tmp_path, capsys):
    def regression(data):
        data["problem_type"] = "regression"
        data["source"]["training"] = {"task": "glue:sst2", "metric": "accuracy"}  # as a fine-tuned model records

    refused_everywhere(copy_of(cls_bundle, tmp_path, regression), tmp_path, capsys,
                       "'problem_type' is 'regression' but the model was trained and scored as a classifier")
    shutil.rmtree(tmp_path / "copy")
    with pytest.raises(BundleError, match="'problem_type' 'regression' does not fit the task 'ner'"):
        Bundle.open(copy_of(ner_bundle, tmp_path, lambda data: data.update(problem_type="regression")))


# --- the labels against those the TFLite file packs ---------------------------------------------------------

def test_labels_swapped_everywhere_but_in_the_model_file_are_refused(cls_bundle, tmp_path, capsys):
    swapped = ["positive", "neutral", "negative"]

    def relabel(data):
        assert data["labels"] == swapped[::-1]
        data["labels"] = swapped
        for a in data["artifacts"]:
            if "metadata" in a["details"]:
                a["details"]["metadata"]["labels"] = swapped

    bundle = copy_of(cls_bundle, tmp_path, relabel, files={"labels.txt": "".join(f"{x}\n" for x in swapped).encode()})
    Bundle.open(bundle)  # the manifest agrees with itself and labels.txt: only the model file can tell
    refused_everywhere(bundle, tmp_path, capsys, ".tflite was converted with the labels ['negative', 'neutral', "
                                                 "'positive'] (its packed labels.txt)", error=ModelError)


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
