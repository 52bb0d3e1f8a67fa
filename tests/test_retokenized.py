"""Distillation across tokenizations (trim-vocab --retune): word pairing and a measurable gap reduction."""

from __future__ import annotations

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.data import load_task
from pocketbert.converter.training.distill.retokenized import distill_retokenized, first_pieces, gap, word_pairs
from pocketbert.converter.training.loop import Budget
from pocketbert.converter.levers.vocab_trim import trim

from .conftest import DATA


def test_first_pieces():
    assert first_pieces([None, 0, 0, 1, 2, 2, 2, None]) == {0: 1, 1: 3, 2: 4}


def test_words_pair_across_vocabularies_and_truncation(tokenizer, checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["ner"]))
    data = load_task("conll2003", "train", DATA, limit=200)
    small, _ = trim(loaded.model, loaded.tokenizer, data.texts[:20], 2500)  # most words now split further
    full = data.encode(tokenizer, max_length=128, label_names=loaded.labels)
    cut = data.encode(small, max_length=16, label_names=loaded.labels)  # truncation drops words
    rows = list(range(len(data)))
    r, s, t = word_pairs(cut, full, rows)
    for row, sp, tp in zip(r.tolist(), s.tolist(), t.tolist()):
        # both positions are the first piece of the same word, which carries that word's tag
        assert cut.word_ids[row][sp] == full.word_ids[row][tp]
        assert cut.labels[row][sp] == full.labels[row][tp] != -100
    kept_words = sum(len({w for w in cut.word_ids[i] if w is not None}) for i in rows)
    assert len(r) == kept_words < sum(len(words) for words in data.texts)
    assert sum(len(ids) for ids in cut.input_ids) > 0


@pytest.mark.parametrize("head, task", [("ner", "conll2003"), ("classification", "glue:sst2")])
def test_retune_closes_the_gap_a_trim_opens(checkpoints, head, task):
    teacher = loading.load(str(checkpoints["bert"][head]))
    student = loading.load(str(checkpoints["bert"][head]))
    # A random tiny model's logits barely depend on the input (its pooled features least of all): scale
    # the head so they do, as a trained head's do.
    for model in (teacher.model, student.model):
        model.classifier.weight.data.mul_(50.0 if head == "ner" else 100.0)
    data = load_task(task, "train", DATA, limit=160)
    labels = teacher.labels if head == "ner" else None
    # choose the pieces on a few examples only, so the rest of the text is segmented differently
    small, report = trim(student.model, student.tokenizer, data.texts[:10], 2200, check_texts=data.texts)
    assert report["texts_tokenized_unchanged"] < 0.5
    t_features = data.encode(teacher.tokenizer, 64, labels)
    s_features = data.encode(small, 64, labels)
    before = gap(teacher.model, student.model, t_features, s_features)
    assert before > (1e-4 if head == "ner" else 1e-6)  # the trim changed what the model computes here
    untouched = {k: v.clone() for k, v in teacher.model.state_dict().items()}
    log = distill_retokenized(teacher.model, student.model, t_features, s_features, budget=Budget(steps=60),
                              lr=1e-3 if head == "ner" else 1e-4, batch_size=16, progress=False)
    after = gap(teacher.model, student.model, t_features, s_features)
    assert log.steps == 60
    assert after < (0.5 if head == "ner" else 0.8) * before, (before, after)
    for k, v in teacher.model.state_dict().items():  # the teacher is only read
        assert torch.equal(v, untouched[k]), k
