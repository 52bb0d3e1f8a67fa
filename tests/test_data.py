"""Task data readers on the real shared data files, label alignment, metrics, and their errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from pocketbert.converter.data import load_task
from pocketbert.converter.data.conll import detect_scheme, read_conll, to_iob2
from pocketbert.converter.data.features import IGNORE
from pocketbert.converter.data.metrics import glue_scores, ner_scores, score
from pocketbert.converter.errors import ConverterInputError

from .conftest import DATA


def test_glue_counts_and_labels():
    sst2 = load_task("glue:sst2", "train", DATA)
    assert len(sst2) == 67349 and Counter(sst2.labels) == {0: 29780, 1: 37569}
    dev = load_task("glue:sst2", "dev", DATA)
    assert len(dev) == 872 and Counter(dev.labels) == {0: 428, 1: 444}
    assert dev.label_names == ["negative", "positive"] and not dev.pairs
    test = load_task("glue:sst2", "test", DATA)
    assert len(test) == 1821 and test.labels is None


def test_pairs_bom_and_headerless():
    mrpc = load_task("glue:mrpc", "dev", DATA)  # UTF-8 BOM, pair columns #1/#2 String
    assert len(mrpc) == 408 and mrpc.pairs and Counter(mrpc.labels) == {1: 279, 0: 129}
    assert mrpc.texts[0][0].startswith("He said the foodservice pie business")
    cola = load_task("glue:cola", "dev", DATA)  # no header, 4 columns, no final newline
    assert len(cola) == 1043 and Counter(cola.labels) == {1: 721, 0: 322}
    stsb = load_task("glue:stsb", "dev", DATA)
    assert len(stsb) == 1500 and stsb.kind == "regression" and stsb.pairs
    assert np.mean(stsb.labels) == pytest.approx(2.36, abs=0.01)


def test_conll_counts_and_iob1_to_iob2():
    dev = load_task("conll2003", "dev", DATA)
    assert len(dev) == 3250 and sum(map(len, dev.texts)) == 51362
    assert sum(t.startswith("B-") for s in dev.labels for t in s) == 5942
    assert dev.details["scheme"] == "iob2"
    original = load_task(str(DATA / "conll2003" / "original_iob1" / "eng.testa"), "dev")
    assert original.details["scheme"] == "iob1"
    assert original.texts == dev.texts and original.labels == dev.labels  # converted exactly


def test_scheme_conversion():
    assert detect_scheme([["B-PER", "I-PER", "O"]]) == "iob2"
    assert detect_scheme([["I-PER", "I-PER", "B-PER"]]) == "iob1"
    assert to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"], "iob1") == ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert to_iob2(["S-PER", "B-ORG", "I-ORG", "E-ORG"], "iobes") == ["B-PER", "B-ORG", "I-ORG", "I-ORG"]


def test_any_column_layout(tmp_path):
    path = tmp_path / "two_columns.txt"
    path.write_text("John B-PER\nlives O\nin O\nNew B-LOC\nYork I-LOC\n\nHi O\n")
    data = load_task(str(path), "train")
    assert data.texts == [["John", "lives", "in", "New", "York"], ["Hi"]]
    assert data.label_names == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_first_piece_alignment(tokenizer):
    dev = load_task("conll2003", "dev", DATA, limit=200)
    features = dev.encode(tokenizer, max_length=512)
    assert features.truncated == 0
    for words, tags, labels, word_ids in zip(dev.texts, dev.labels, features.labels, features.word_ids):
        labelled = [(w, lab) for w, lab in zip(word_ids, labels) if lab != IGNORE]
        assert [w for w, _ in labelled] == list(range(len(words)))  # exactly one labelled piece per word
        assert [features.label_names[lab] for _, lab in labelled] == tags
        # every non-first piece and every special token is ignored
        first = {word_ids.index(w) for w in range(len(words))}
        assert all(lab == IGNORE for i, lab in enumerate(labels) if i not in first)


def test_pair_batches_have_segments(tokenizer):
    features = load_task("glue:mrpc", "dev", DATA, limit=8).encode(tokenizer, 128)
    batch = next(iter(features.batches(8)))
    assert batch["token_type_ids"].max() == 1 and batch["labels"].dtype.is_floating_point is False
    assert (batch["attention_mask"].sum(1) == batch["attention_mask"].shape[1]).any()  # dynamic padding


def test_shuffled_batches_are_seeded_and_cover_everything(tokenizer):
    features = load_task("glue:sst2", "dev", DATA, limit=300).encode(tokenizer, 128)
    batches = features.batches(16, shuffle=True, seed=3)
    order = batches.order(0)
    assert order == batches.order(0) and order != batches.order(1)
    assert sorted(i for rows in order for i in rows) == list(range(300))


def test_metrics_hand_computed():
    # MCC for tp=2, tn=1, fp=1, fn=0: (2*1 - 1*0) / sqrt(3*2*2*1) = 2/sqrt(12)
    assert glue_scores("matthews", [1, 1, 1, 0], [1, 1, 0, 0])["matthews"] == pytest.approx(100 * 2 / 12 ** 0.5)
    mrpc = glue_scores("f1", [1, 0, 1, 1], [1, 0, 0, 1])
    assert mrpc["accuracy"] == 75 and mrpc["f1"] == pytest.approx(80)  # p=2/3, r=1
    stsb = glue_scores("pearson", [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0])
    assert stsb["spearman"] == pytest.approx(100) and 95 < stsb["pearson"] < 100
    # one of two gold entities found, one false positive: p = r = f1 = 0.5
    ner = ner_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    assert ner == pytest.approx({"f1": 50.0, "precision": 50.0, "recall": 50.0})


def test_score_from_perfect_logits(tokenizer):
    dev = load_task("conll2003", "dev", DATA, limit=50)
    features = dev.encode(tokenizer, 512)
    logits = []
    for labels in features.labels:  # one-hot logits at labelled pieces, "O" elsewhere
        x = np.zeros((len(labels), len(features.label_names)))
        for i, lab in enumerate(labels):
            x[i, lab if lab != IGNORE else 0] = 1
        logits.append(x)
    assert score(features, logits)["f1"] == 100


# --- errors a user can act on, before any training ----------------------------------------------

def _problem(call) -> str:
    with pytest.raises(ConverterInputError) as info:
        call()
    assert info.value.fix
    return info.value.problem


def test_missing_and_empty_files(tmp_path):
    assert "does not exist" in _problem(lambda: load_task(str(tmp_path / "nope.tsv"), "train"))
    (tmp_path / "empty.tsv").write_text("\n\n")
    assert "empty" in _problem(lambda: load_task(str(tmp_path / "empty.tsv"), "train"))


def test_wrong_column_count(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("sentence1\tsentence2\tlabel\na\tb\t1\nonly one column\n")
    assert "line 3" in _problem(lambda: load_task(str(path), "train"))


def test_unknown_tag_scheme(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("John PERSON\nlives O\n")
    assert "not in a known scheme" in _problem(lambda: load_task(str(path), "train"))


def test_unknown_task_and_missing_data_dir(tmp_path):
    assert "unknown task" in _problem(lambda: load_task("glue:mnli", "train", DATA))
    assert "does not exist" in _problem(lambda: load_task("glue:sst2", "train", tmp_path))


def test_labels_the_model_lacks(tokenizer):
    dev = load_task("conll2003", "dev", DATA, limit=20)
    assert "lack" in _problem(lambda: dev.encode(tokenizer, 128, label_names=["O", "B-PER", "I-PER"]))
    sst2 = load_task("glue:sst2", "dev", DATA, limit=20)
    assert "labels" in _problem(lambda: sst2.encode(tokenizer, 128, label_names=["a", "b", "c"]))


def test_conll_declared_iob2_but_iob1(tmp_path):
    path = tmp_path / "iob1.txt"
    path.write_text("EU I-ORG\nrejects O\n")
    assert "IOB1" in _problem(lambda: read_conll(path, scheme="iob2"))
