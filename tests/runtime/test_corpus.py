"""python -m runtime BUNDLE --input FILE --output FILE: corpus files streamed through a bundle.

Real SST-2 and CoNLL-2003 sentences; the results must equal the pipeline called in one process, row for
row, in every format; a run killed with SIGKILL must leave nothing under the output name and resume
without losing or repeating a row; bad rows are named by line; an existing output is never replaced
unasked.  The int8-dynamic ONNX artifact runs row by row (batch-invariant), so equality is exact.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pocketbert import runtime
from pocketbert.converter.inputs.texts import read_texts
from pocketbert.runtime.cli import main
from pocketbert.runtime.corpus.batch_predictor import BatchPredictor

from ..conftest import DATA

ROWS = 3000


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def sst2_train() -> list[str]:
    return read_texts(DATA / "glue" / "SST-2" / "train.tsv")[:ROWS]


@pytest.fixture(scope="module")
def expected(cls_bundle, sst2_train) -> list[dict]:
    """The pipeline in one process, on the whole list at once."""
    clf = runtime.load(cls_bundle, threads=1)
    return [{"pred_label": r[0]["label"], "pred_score": r[0]["score"]} for r in clf(sst2_train, top_k=1)]


def write_jsonl(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": f"{i:05d}", "text": text}) + "\n")
    return path


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_jsonl_csv_tsv_parquet_equal_one_process(cls_bundle, sst2_train, expected, tmp_path):
    want = [{"id": f"{i:05d}", "text": t, **e} for i, (t, e) in enumerate(zip(sst2_train, expected))]
    write_jsonl(tmp_path / "in.jsonl", sst2_train)
    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["id", "text"]] + [[r["id"], r["text"]] for r in want])
    with open(tmp_path / "in.tsv", "w", encoding="utf-8") as f:
        f.write("id\ttext\n" + "".join(f"{r['id']}\t{r['text']}\n" for r in want))
    pq.write_table(pa.table({"id": [r["id"] for r in want], "text": sst2_train}), tmp_path / "in.parquet",
                   row_group_size=700)
    for fmt in ("jsonl", "csv", "tsv", "parquet"):
        result = run(cls_bundle, "--input", tmp_path / f"in.{fmt}", "--output", tmp_path / f"out.{fmt}",
                     "--threads", 1, "--chunk-rows", 400)
        assert result.exit_code == 0, result.output
    assert read_jsonl(tmp_path / "out.jsonl") == want
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == want
    for fmt, delimiter in (("csv", ","), ("tsv", "\t")):
        rows = list(csv.DictReader(open(tmp_path / f"out.{fmt}", encoding="utf-8", newline=""), delimiter=delimiter,
                                   quoting=csv.QUOTE_MINIMAL if fmt == "csv" else csv.QUOTE_NONE))
        assert [{**r, "pred_score": float(r["pred_score"])} for r in rows] == want, fmt  # score: shortest repr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"in.{f}" for f in ("jsonl", "csv", "tsv", "parquet")] + [f"out.{f}" for f in ("jsonl", "csv", "tsv",
                                                                                      "parquet")])


def test_csv_quoted_fields_and_exact_ids(cls_bundle, tmp_path):
    """RFC 4180 quoting (commas, quotes, a line break in a field) and ids kept as written."""
    texts = ['a "quoted" film, with commas', "two\nlines", "plain"]
    source = tmp_path / "in.csv"
    with open(source, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["id", "text", "note"], ["007", texts[0], ""], ["0x1", texts[1], "n"],
                                 ["1e3", texts[2], "m"]])
    result = run(cls_bundle, "--input", source, "--output", tmp_path / "out.csv", "--top-k", 2)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(open(tmp_path / "out.csv", encoding="utf-8", newline="")))
    assert [r["id"] for r in rows] == ["007", "0x1", "1e3"] and [r["text"] for r in rows] == texts
    want = runtime.load(cls_bundle)(texts, top_k=2)
    assert [json.loads(r["pred_top"]) for r in rows] == want
    assert [r["pred_label"] for r in rows] == [w[0]["label"] for w in want]


def test_ner_parquet_entities_are_typed_and_equal_jsonl(ner_bundle, conll_sentences, tmp_path):
    texts = conll_sentences[:300]
    write_jsonl(tmp_path / "in.jsonl", texts)
    pq.write_table(pa.table({"id": [f"{i:05d}" for i in range(len(texts))], "text": texts}), tmp_path / "in.parquet")
    for fmt in ("jsonl", "parquet"):
        result = run(ner_bundle, "--input", tmp_path / f"in.{fmt}", "--output", tmp_path / f"out.{fmt}",
                     "--chunk-rows", 64)
        assert result.exit_code == 0, result.output
    table = pq.read_table(tmp_path / "out.parquet")
    assert pa.types.is_list(table.schema.field("pred_entities").type)
    from_jsonl = read_jsonl(tmp_path / "out.jsonl")
    assert table.to_pylist() == from_jsonl
    assert [r["pred_entities"] for r in from_jsonl] == runtime.load(ner_bundle)(texts)
    assert sum(len(r["pred_entities"]) for r in from_jsonl) > 100  # the random head tags plenty


def test_bad_rows_named_by_line_then_skipped(cls_bundle, tmp_path):
    source = tmp_path / "in.jsonl"
    lines = ['{"id": 1, "text": "fine"}', '{"id": 2}', '', '{"id": 3, "text": null}', '{"id": 4, "text": 5}',
             '{"id": 5, "text": "ok"', '["not", "an", "object"]', '{"id": 6, "text": "\\ud800 lone"}',
             '{"id": 7, "text": "last"}']
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    stopped = run(cls_bundle, "--input", source, "--output", out)
    assert stopped.exit_code == 5
    assert "line 2: field 'text' is missing" in stopped.output and "--skip-bad" in stopped.output
    assert not out.exists()
    skipped = run(cls_bundle, "--input", source, "--output", out, "--skip-bad", "--resume")
    assert skipped.exit_code == 0, skipped.output
    for line, why in ((2, "is missing"), (4, "is null"), (5, "is int"), (6, "not valid JSON"), (7, "not an object"),
                      (8, "lone surrogate")):
        assert f"line {line}: " in skipped.output and why in skipped.output, (line, skipped.output)
    assert [r["id"] for r in read_jsonl(out)] == [1, 7]
    assert not (tmp_path / "out.jsonl.partial").exists() and not (tmp_path / "out.jsonl.partial.progress.json").exists()


def test_bad_csv_and_parquet_rows(cls_bundle, tmp_path):
    (tmp_path / "in.csv").write_text("id,text\n1,good\n2\n3,also good\n", encoding="utf-8")
    result = run(cls_bundle, "--input", tmp_path / "in.csv", "--output", tmp_path / "out.csv")
    assert result.exit_code == 5 and "line 3: has 1 fields, the header has 2" in result.output
    pq.write_table(pa.table({"id": [1, 2, 3], "text": ["a", None, "c"]}), tmp_path / "in.parquet")
    result = run(cls_bundle, "--input", tmp_path / "in.parquet", "--output", tmp_path / "out.parquet", "--skip-bad")
    assert result.exit_code == 0 and "row 2: field 'text' is null" in result.output
    assert pq.read_table(tmp_path / "out.parquet").column("id").to_pylist() == [1, 3]
    missing = run(cls_bundle, "--input", tmp_path / "in.parquet", "--output", tmp_path / "o2.parquet",
                  "--text-field", "body")
    assert missing.exit_code == 5 and "no column 'body'" in missing.output and "--text-field" in missing.output


def test_existing_output_refused_without_overwrite(cls_bundle, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ["a fine film", "dull"])
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    refused = run(cls_bundle, "--input", tmp_path / "in.jsonl", "--output", out)
    assert refused.exit_code == 2 and "already exists" in refused.output and "--overwrite" in refused.output
    assert out.read_text() == "precious\n"
    replaced = run(cls_bundle, "--input", tmp_path / "in.jsonl", "--output", out, "--overwrite")
    assert replaced.exit_code == 0 and [r["text"] for r in read_jsonl(out)] == ["a fine film", "dull"]
    stranger = tmp_path / "o2.jsonl.partial"  # not ours (no progress record): never deleted
    stranger.write_text("someone's\n")
    result = run(cls_bundle, "--input", tmp_path / "in.jsonl", "--output", tmp_path / "o2.jsonl", "--overwrite")
    assert result.exit_code == 2 and stranger.read_text() == "someone's\n"


def test_sigkill_then_resume_loses_and_repeats_no_row(cls_bundle, sst2_train, expected, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", sst2_train)
    out = tmp_path / "out.jsonl"
    record = tmp_path / "out.jsonl.partial.progress.json"
    command = [sys.executable, "-m", "pocketbert.runtime", str(cls_bundle), "--input", str(source), "--output",
               str(out), "--threads", "1", "--chunk-rows", "20"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if json.loads(record.read_text())["rows_read"] >= 400:
                break
        except (FileNotFoundError, ValueError, KeyError):
            pass
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed: " + process.stderr.read().decode()
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not out.exists()  # nothing under the output name
    done = json.loads(record.read_text())["rows_read"]
    assert 400 <= done < ROWS
    again = subprocess.run(command, capture_output=True, text=True)
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    want = [{"id": f"{i:05d}", "text": t, **e} for i, (t, e) in enumerate(zip(sst2_train, expected))]
    assert read_jsonl(out) == want
    assert not record.exists()


def test_resume_refuses_another_run(cls_bundle, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", ["bad", "good"])
    lines = source.read_text().splitlines()
    source.write_text(lines[0] + "\n{}\n" + lines[1] + "\n")
    out = tmp_path / "out.jsonl"
    assert run(cls_bundle, "--input", source, "--output", out, "--chunk-rows", 1).exit_code == 5  # 1 row saved
    changed = run(cls_bundle, "--input", source, "--output", out, "--resume", "--top-k", 2)
    assert changed.exit_code == 5 and "top_k" in changed.output and "--overwrite" in changed.output
    done = run(cls_bundle, "--input", source, "--output", out, "--resume", "--skip-bad")
    assert done.exit_code == 0 and [r["text"] for r in read_jsonl(out)] == ["bad", "good"]


def test_batch_predictor_on_pandas_as_spark_gives_it(cls_bundle, sst2_train, expected):
    """mapInPandas hands the function pandas DataFrames: the same class, the same predictions."""
    import pandas as pd

    frame = pd.DataFrame({"id": range(200), "text": sst2_train[:200]})
    predictor = BatchPredictor(str(cls_bundle), {"load": {"threads": 1}})
    out = predictor(frame)
    assert list(out["id"]) == list(range(200))
    assert out[["pred_label", "pred_score"]].to_dict("records") == expected[:200]
    assert predictor.spark_ddl() == "pred_label string, pred_score double"
    frame.loc[3, "text"] = None
    skipping = BatchPredictor(str(cls_bundle), {"load": {"threads": 1}}, bad_rows="skip")
    assert 3 not in list(skipping(frame)["id"]) and len(skipping(frame)) == 199
