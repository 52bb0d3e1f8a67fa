"""python -m runtime: arguments, --file, stdin, JSON Lines, table, errors and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pocketbert import runtime
from pocketbert.runtime.cli import main

TEXTS = ["Peter Blackburn met EU officials in Brussels .", "", "Café in Zürich"]


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("aggregation", ["simple", "none"])
def test_texts_as_arguments_give_json_lines(ner_bundle, aggregation):
    result = run(ner_bundle, *TEXTS, "--aggregation", aggregation)
    assert result.exit_code == 0, result.output
    ner = runtime.load(ner_bundle)
    assert lines(result) == [{"text": t, "entities": e} for t, e in zip(TEXTS, ner(TEXTS, aggregation=aggregation))]


def test_file_and_stdin(cls_bundle, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffa fine film\r\n\nawful\n".encode())
    expected = runtime.load(cls_bundle)(["a fine film", "", "awful"], top_k=2)
    from_file = run(cls_bundle, "--file", path, "--top-k", 2)
    from_stdin = run(cls_bundle, "--top-k", 2, input="a fine film\n\nawful\n")
    for result in (from_file, from_stdin):
        assert result.exit_code == 0, result.output
        assert [r["labels"] for r in lines(result)] == expected
        assert [r["text"] for r in lines(result)] == ["a fine film", "", "awful"]


def test_pairs(cls_bundle):
    result = run(cls_bundle, "--pairs", input="a fine film\tgood\n")
    assert lines(result) == [{"text": "a fine film", "text_pair": "good",
                              "labels": runtime.load(cls_bundle)([("a fine film", "good")], top_k=1)[0]}]
    bad = run(cls_bundle, "--pairs", input="ok\tok\nno tab here\n")
    assert bad.exit_code == 5 and "input 2 has 1 tab-separated fields" in bad.stderr


def test_backend_precision_and_threads(cls_bundle):
    result = run(cls_bundle, "a fine film", "--backend", "tflite", "--precision", "fp32", "--threads", 1)
    want = runtime.load(cls_bundle, backend="tflite", precision="fp32")(["a fine film"], top_k=1)
    assert [r["labels"] for r in lines(result)] == want


def test_table_output(ner_bundle):
    result = run(ner_bundle, TEXTS[0], "--output", "table")
    assert result.exit_code == 0
    assert "┃ entity" in result.stdout and "Blackburn" in result.stdout


def test_errors_have_exit_codes_and_fixes(ner_bundle, tmp_path):
    missing = run(tmp_path / "none", "x")
    assert missing.exit_code == 3 and "does not exist" in missing.stderr and "fix:" in missing.stderr
    bad_recipe = run(ner_bundle, "x", "--recipe", "onnx:int8-static")
    assert bad_recipe.exit_code == 3 and "onnx:fp32, tflite:fp32" in bad_recipe.stderr
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    not_utf8 = run(ner_bundle, "--file", tmp_path / "latin1.txt")
    assert not_utf8.exit_code == 5 and "line 1 is not UTF-8" in not_utf8.stderr
    both = run(ner_bundle, "x", "--file", tmp_path / "latin1.txt")
    assert both.exit_code == 2


def test_python_dash_m(ner_bundle):
    """The real entry point, in a fresh process: stdout holds JSON Lines only, stderr stays free of
    LiteRT's native log lines."""
    done = subprocess.run([sys.executable, "-m", "pocketbert.runtime", str(ner_bundle), "Peter Blackburn", "--backend", "tflite"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert record["text"] == "Peter Blackburn" and record["entities"]
    assert "XNNPACK" not in done.stderr


LOAD_AND_RUN = """
import sys
from pocketbert import runtime
ner = runtime.load(sys.argv[1], backend="tflite", instances=2)
ner(["Peter Blackburn", "Peter Blackburn " * 40])
print("the program's own line", file=sys.stderr)
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_runtime_load_keeps_litert_info_line_out_of_a_programs_stderr(ner_bundle, verbose, tmp_path):
    """LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate" from C++ at an interpreter's first run; a
    program using the library sees only its own lines (POCKETBERT_VERBOSE=1: everything)."""
    env = {k: v for k, v in os.environ.items() if k != "POCKETBERT_VERBOSE"} | ({"POCKETBERT_VERBOSE": "1"} if verbose
                                                                                else {})
    done = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(ner_bundle)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)  # a user's folder: the installed package is imported
    assert done.returncode == 0, done.stderr
    if verbose:
        assert "XNNPACK delegate" in done.stderr
    else:
        assert done.stderr == "the program's own line\n"
