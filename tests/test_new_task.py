"""A task the project has never seen, taken as a user would: an NER corpus with its own six entity types
(``token<TAB>tag`` lines) and a sentence-pair entailment TSV, each given as files with their own dev file:
read by content, fine-tuned, converted with ``--recover FILE --dev DEVFILE`` and held to the gates on the
dev split they name (never the training file)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import gates
from pocketbert.benchmarks.accuracy import AccuracyError
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import InputError
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune

from .conftest import DATA, REPO

# Six entity types of the corpus's own (none of them CoNLL-2003's PER/ORG/LOC/MISC), each with its words.
ENTITIES = {
    "person": ["alice", "bob", "carol", "dave"], "location": ["paris", "oslo", "lima", "cairo"],
    "corporation": ["acme", "globex", "initech"], "product": ["iphone", "walkman", "kindle"],
    "creative-work": ["hamlet", "inception", "dune"], "group": ["beatles", "abba", "queen"]}
FILLER = ["the", "a", "we", "saw", "love", "with", "and", "today", "new", "old", "at", "near"]


def ner_corpus(path: Path, sentences: int, seed: int) -> Path:
    """``token<TAB>tag`` lines in IOB2, a blank line between sentences; one or two entities per sentence."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(sentences):
        for _ in range(rnd.randint(1, 2)):
            lines += [f"{w}\tO" for w in rnd.sample(FILLER, rnd.randint(1, 3))]
            kind = rnd.choice(sorted(ENTITIES))
            words = rnd.sample(ENTITIES[kind], rnd.randint(1, 2))
            lines += [f"{w}\t{'B' if i == 0 else 'I'}-{kind}" for i, w in enumerate(words)]
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def entailment_tsv(path: Path, rows: int, seed: int) -> Path:
    """premise/hypothesis pairs labelled by name: entailment when the hypothesis repeats the premise's subject."""
    rnd = random.Random(seed)
    names = [w for words in ENTITIES.values() for w in words]
    out = ["premise\thypothesis\tlabel"]
    for i in range(rows):
        subject, other = rnd.sample(names, 2)
        entails = i % 2 == 0
        out.append(f"{subject} {rnd.choice(FILLER)} {rnd.choice(FILLER)}\t{subject if entails else other} was there\t"
                   f"{'entailment' if entails else 'not_entailment'}")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ner_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ner")
    return ner_corpus(root / "train.txt", 160, 0), ner_corpus(root / "dev.txt", 40, 1)


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    return entailment_tsv(root / "train.tsv", 160, 0), entailment_tsv(root / "dev.tsv", 40, 1)


def test_tab_separated_conll_with_its_own_tag_set_is_read_as_conll(ner_files):
    train = load_task(str(ner_files[0]), "train")
    assert train.kind == "ner" and len(train) == 160
    kinds = sorted(ENTITIES)
    assert train.label_names == ["O"] + [f"{p}-{k}" for k in kinds for p in ("B", "I")]
    assert all(len(words) == len(tags) for words, tags in zip(train.texts, train.labels))


def test_content_decides_not_the_suffix(tmp_path, ner_files, pair_files):
    conll_named_tsv = tmp_path / "corpus.tsv"
    conll_named_tsv.write_text(ner_files[0].read_text())
    assert load_task(str(conll_named_tsv), "train").kind == "ner"
    tsv_named_txt = tmp_path / "pairs.txt"
    tsv_named_txt.write_text(pair_files[0].read_text())
    pairs = load_task(str(tsv_named_txt), "train")
    assert pairs.kind == "classification" and pairs.pairs and pairs.label_names == ["entailment", "not_entailment"]


def test_a_file_that_is_neither_says_why_each_reading_failed(tmp_path):
    bad = tmp_path / "notes.tsv"
    bad.write_text("id\ttext\tscore\n1\tsome words\t3\n")
    with pytest.raises(InputError) as info:
        load_task(str(bad), "train")
    problem = info.value.problem
    assert "as CoNLL" in problem and "as a GLUE TSV" in problem
    assert "'score', not in a known scheme" in problem and "'sentence' column" in problem
    half = tmp_path / "ragged.txt"  # token lines, but one has no tag
    half.write_text("alice\tB-person\nsaw\n")
    with pytest.raises(InputError, match="line 2 .* has one column"):
        load_task(str(half), "train")


def test_gates_never_score_the_training_file_as_dev(ner_files):
    train, dev = (str(p) for p in ner_files)
    assert gates.dev_data({"task": "glue:sst2"}) == "glue:sst2"  # a short name: its own dev split
    assert gates.dev_data({"task": train, "train_file": train, "dev_file": dev}) == dev
    with pytest.raises(AccuracyError, match="records no dev file"):
        gates.dev_data({"task": train})  # a bundle from before dev files were recorded
    with pytest.raises(AccuracyError, match="is the training file"):
        gates.dev_data({"task": train, "train_file": train}, dev=train)
    assert gates.dev_data({"task": train}, dev=dev) == dev


def test_accuracy_help_documents_file_tasks_and_split():
    from pocketbert.benchmarks.__main__ import cli

    text = " ".join(CliRunner().invoke(cli, ["accuracy", "--help"]).output.split())
    assert "CoNLL file" in text and "GLUE-format TSV" in text
    assert "for a task given as a file, only the name the results record" in text


def _finetune(base: Path, files, out: Path) -> Path:
    finetune(FinetuneOptions(checkpoint=str(base), task=str(files[0]), dev=str(files[1]), out=out,
                             budget=loop.Budget(steps=30), lr=3e-3, batch_size=16, progress=False),
             log=lambda *a: None)
    return out


def _convert_cli(checkpoint: Path, files, out: Path) -> None:
    """The user's command line, as a subprocess: ``--recover FILE --dev DEVFILE`` on ``convert``."""
    done = subprocess.run(
        [sys.executable, "-m", "pocketbert.converter", str(checkpoint), "--opt", "nonorm,relu,fold,int8",
         "--recover", str(files[0]), "--dev", str(files[1]), "--recover-budget", "12steps", "--format", "onnx",
         "--int8", "dynamic", "--verify-samples", "40", "--calibration-samples", "32", "--no-latency",
         "--max-accuracy-drop", "100", "--threads", "1", "--data-dir", str(DATA), "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _convert_api(checkpoint: Path, files, out: Path) -> None:
    """The same through the Python API (ConvertOptions.recover_options["dev"])."""
    from pocketbert.converter.pipeline import ConvertOptions, convert

    convert(ConvertOptions(checkpoint=str(checkpoint), out=out, opts="nonorm,relu,fold,int8", recover=str(files[0]),
                           recover_options={"dev": str(files[1]), "budget": loop.Budget(steps=12),
                                            "progress": False},
                           formats="onnx", int8="dynamic", verify_samples=40, calibration_samples=32,
                           measure_latency=False, max_accuracy_drop=100, threads=1, data_dir=DATA))


@pytest.mark.parametrize("kind", ["ner", "pairs"])
def test_new_task_end_to_end_convert_recover_dev_and_gates(kind, checkpoints, ner_files, pair_files, tmp_path):
    files = ner_files if kind == "ner" else pair_files
    teacher = _finetune(checkpoints["bert"]["none"], files, tmp_path / "teacher")
    (_convert_cli if kind == "ner" else _convert_api)(teacher, files, tmp_path / "bundle")
    recovery = json.loads((tmp_path / "bundle" / "manifest.json").read_text())["recovery"]
    assert recovery["dev_file"] == str(files[1]) and recovery["train_file"] == str(files[0])
    assert recovery["dev_examples"] == 40  # the dev file's 40, not the training file's 160

    rows = gates.check(tmp_path / "bundle", progress=lambda *a: None)
    assert {r["runner"] for r in rows} == {"onnx:fp32", "onnx:int8-dynamic"}
    assert all(r["examples"] == 40 and r["dev_data"] == str(files[1]) for r in rows)
    fp32 = next(r for r in rows if r["runner"] == "onnx:fp32")
    metric = recovery["metric"]
    # the runtime's fp32 export scores what PyTorch scored on the same dev file after recovery
    assert fp32["score"] == pytest.approx(recovery["dev_scores"]["recovered"][metric], abs=0.01)
    assert str(files[1]) in gates.table(rows)
