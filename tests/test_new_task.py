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

import numpy as np
import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import gates
from pocketbert.benchmarks.accuracy import AccuracyError
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import ConverterInputError
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
    with pytest.raises(ConverterInputError) as info:
        load_task(str(bad), "train")
    problem = info.value.problem
    assert "as CoNLL" in problem and "as a GLUE TSV" in problem
    assert "'score', not in a known scheme" in problem and "'sentence' column" in problem
    half = tmp_path / "ragged.txt"  # token lines, but one has no tag
    half.write_text("alice\tB-person\nsaw\n")
    with pytest.raises(ConverterInputError, match="line 2 .* has one column"):
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
    from pocketbert.benchmarks.cli import cli

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
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    recovery = manifest["recovery"]
    assert recovery["dev_file"] == str(files[1]) and recovery["train_file"] == str(files[0])
    # verified on the task's own dev text (pairs for the pair model), calibrated on its own training text
    verification = manifest["verification"]
    assert verification["texts"] == str(files[1]) and verification["samples"] == 40
    assert verification["sentence_pairs"] == (kind == "pairs")
    int8 = next(a for a in manifest["artifacts"] if a["precision"] == "int8-dynamic")
    assert int8["details"]["calibration_source"] == str(files[0])
    weights = int8["details"]["weight_bytes"]  # what the summary explains the file's size with
    assert weights["int8"] > 0 and sum(weights.values()) <= manifest["files"][int8["file"]]["bytes"]
    # NER: the exported model's entities are held against the PyTorch model's
    real, damage = int8["verification"]["real_sentences"], verification["transform_damage"]
    assert ("entity_f1" in real and "entity_f1" in damage) == (kind == "ner")
    if kind == "ner":
        assert int8["verification"]["tolerance"]["min_entity_f1"] == 0.9 and real["entity_f1"] >= 0.9
    assert recovery["dev_examples"] == 40  # the dev file's 40, not the training file's 160

    rows = gates.check(tmp_path / "bundle", progress=lambda *a: None)
    assert {r["runner"] for r in rows} == {"onnx:fp32", "onnx:int8-dynamic"}
    assert all(r["examples"] == 40 and r["dev_data"] == str(files[1]) for r in rows)
    fp32 = next(r for r in rows if r["runner"] == "onnx:fp32")
    metric = recovery["metric"]
    # the runtime's fp32 export scores what PyTorch scored on the same dev file after recovery
    assert fp32["score"] == pytest.approx(recovery["dev_scores"]["recovered"][metric], abs=0.01)
    assert str(files[1]) in gates.table(rows)


# --- verification on the model's own task, and on entities -------------------------------------------

def test_entity_verification_sees_what_token_agreement_hides():
    """A model that keeps 98% of its token predictions but drops every entity fails the int8 bar."""
    from pocketbert.converter.checks import verify

    labels = ["O", "B-person", "I-person"]
    ref = np.full((4, 50, 3), [4.0, -2.0, -2.0])
    ref[:, 10] = [1.0, 1.2, -2.0]  # one entity per row, one word of fifty, and a near tie, as int8 flips them
    out = ref.copy()
    out[:, 10] = [1.2, 1.0, -2.0]
    masks, starts = [np.ones((4, 50), dtype=np.int64)], [np.ones((4, 50), dtype=bool)]
    view = verify.EntityView(starts, labels)
    lost = verify.compare([ref], [out], masks, view)
    assert lost.top1_agreement == pytest.approx(0.98) and lost.cosine > 0.99
    assert lost.entity_f1 == 0.0 and lost.entities == 4
    assert "entity F1" in lost.int8_failure(0.99, 0.95, 0.90)
    assert verify.compare([ref], [ref], masks, view).int8_failure(0.99, 0.95, 0.90) is None
    # the task metric's reading (word_entity_f1) takes a word's tag at its first piece only
    later_pieces = np.zeros((4, 50), dtype=bool)
    later_pieces[:, :10] = True
    assert verify.word_entity_agreement([ref], [out], verify.EntityView([later_pieces], labels)) == (1.0, 0)


def test_word_starts_mark_each_words_first_piece(tokenizer):
    from pocketbert.converter.inputs.encoding import word_starts

    starts = word_starts(tokenizer, ["alice saw unbelievably paris", "bob"], max_length=32)
    pieces = tokenizer(["alice saw unbelievably paris"])["input_ids"][0]
    assert starts.shape[1] == len(pieces) and starts[0].sum() == 4 and starts[1].sum() == 1
    assert not starts[:, 0].any()  # [CLS] is no word


@pytest.mark.parametrize("command", ["finetune", "recover", "trim-vocab", "share-embeddings"])
def test_checkpoint_commands_list_their_own_exit_codes(command):
    from pocketbert.converter.cli import cli

    text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
    assert "0 checkpoint written" in text and "6 output not writable" in text
    assert "nonorm/relu would lose accuracy" not in text and "failed verification" not in text


def test_a_finetune_at_chance_warns_with_the_budget_the_task_needs(checkpoints, ner_files, tmp_path):
    """Two steps at a learning rate too small to move a weight learn nothing: the checkpoint is written, but
    the result and its record say so."""
    result = finetune(FinetuneOptions(checkpoint=str(checkpoints["bert"]["none"]), task=str(ner_files[0]),
                                      dev=str(ner_files[1]), out=tmp_path / "short", budget=loop.Budget(steps=2),
                                      lr=1e-12, batch_size=16, progress=False), log=lambda *a: None)
    record = json.loads((tmp_path / "short" / "training.json").read_text())
    assert record["dev_without_training"]["before_fine_tuning"] == pytest.approx(result.scores["f1"], abs=1e-3)
    [warning] = result.warnings
    assert "no better than" in warning and "2 steps" in warning
    assert "--budget 3epochs" in warning and "30 steps" in warning  # 160 sentences: 10 batches of 16 per epoch
    assert record["warnings"] == [warning]


def test_constant_baseline_is_the_best_constant_answer(pair_files):
    from pocketbert.converter.training import chance

    dev = load_task(str(pair_files[1]), "dev")  # 20 entailment, 20 not
    assert chance.constant_baseline(dev) == (50.0, "always answering 'entailment'")
    log, budget = loop.TrainLog(steps=300), loop.Budget(steps=300)
    assert "always answering 'entailment' (50.00)" in chance.warning(dev, 50.5, 20.0, log, 100, budget)
    assert "the model before fine-tuning (70.00)" in chance.warning(dev, 70.5, 70.0, log, 100, budget)
    assert chance.warning(dev, 80.0, 50.0, log, 100, budget) is None


def test_the_summary_says_why_a_quantised_file_is_large():
    from pocketbert.converter.cli.render import size_line

    details = {"weight_bytes": {"float32": 36_000_000, "int8": 11_000_000, "int64": 4_000},
               "float_fallback": {"linears_in_float": 24, "linears": 36, "roles": ["ffn_output", "ffn_input"]}}
    line = size_line("onnx:int8-dynamic", 47_700_000, details)
    assert line == ("onnx:int8-dynamic 47.7 MB: weights 36.0 MB float32, 11.0 MB int8; 24 of 36 Linear layers kept "
                    "in float for accuracy (ffn_output, ffn_input), 4 bytes per weight where int8 takes 1")
    assert size_line("onnx:fp32", 90_000_000, {}) is None


def test_training_stopped_inside_its_first_epoch_warns(pair_files):
    from pocketbert.converter.training import chance

    dev = load_task(str(pair_files[1]), "dev")
    short = chance.warning(dev, 80.0, 50.0, loop.TrainLog(steps=10), 13, loop.Budget(steps=10))
    assert "seen 77% of it" in short and "39 steps" in short and "--budget 3epochs" in short
    assert chance.warning(dev, 80.0, 50.0, loop.TrainLog(steps=13), 13, loop.Budget(epochs=1)) is None
