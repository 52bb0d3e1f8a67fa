"""TinyBERT's data augmentation (converter.data.augment): neighbours from the teacher's word-piece embeddings,
variants that keep their labels (NER: tags aligned, mentions swapped within their type), and a recovery that
distils on them."""

from __future__ import annotations

import pytest
import torch

from pocketbert.converter.data import augment
from pocketbert.converter.data.features import TaskData
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune
from pocketbert.converter.training.recovery import RecoverOptions, recover_checkpoint

from .conftest import DATA

SYNONYMS = [("good", "great"), ("movie", "film"), ("storm", "rain")]


@pytest.fixture(scope="module")
def table(tokenizer):
    """Random embeddings in which each word of SYNONYMS is its partner's nearest whole-word piece."""
    vocab = tokenizer.get_vocab()
    generator = torch.Generator().manual_seed(0)
    embeddings = torch.randn(len(vocab), 32, generator=generator)
    for a, b in SYNONYMS:
        embeddings[vocab[b]] = embeddings[vocab[a]] + 0.01 * torch.randn(32, generator=generator)
    return embeddings


def test_neighbours_are_the_nearest_whole_word_pieces(tokenizer, table):
    near = augment.neighbours(tokenizer, table, ["good", "Movie", "storm", "unbelievableness", "##s", "42"])
    assert near.lowercase  # MiniLM's tokenizer is uncased: "Movie" is looked up as "movie"
    for a, b in SYNONYMS:
        assert near.of(a)[0] == b
        assert a not in near.of(a) and len(near.of(a)) == augment.NEIGHBOURS
    assert near.of("Movie")[0] == "film"
    assert near.of("unbelievableness") == ()  # several pieces: kept as it is
    assert near.of("42") == () and near.of("##s") == ()
    pieces = [p for word in ("good", "movie", "storm") for p in near.of(word)]
    assert all(augment.WORD.fullmatch(p) and not p.startswith("##") for p in pieces)


def _near():
    return augment.Neighbours({"good": ("great",), "movie": ("film",), "storm": ("rain",)}, lowercase=True)


def test_sentence_variants_keep_labels_punctuation_and_case():
    data = TaskData("t", "classification", "train", DATA, texts=["A good movie, 10/10!", "no words to swap 42"],
                    labels=[1, 0], label_names=["negative", "positive"])
    out = augment.augment(data, _near(), copies=20, p=0.5, seed=1)
    assert out.texts[:2] == data.texts and out.labels[:2] == [1, 0]
    variants = out.texts[2:]
    # two words with one neighbour each: at most three distinct variants, and the second example has none
    assert sorted(variants) == ["A good film, 10/10!", "A great film, 10/10!", "A great movie, 10/10!"]
    assert out.labels[2:] == [1, 1, 1]
    assert out.details["augmented"]["variants"] == 3 and out.details["augmented"]["originals"] == 2
    cased = augment.augment(TaskData("t", "classification", "train", DATA, texts=["Good", "GOOD"], labels=[0, 0],
                                     label_names=["a", "b"]), _near(), copies=5, p=1.0)
    assert cased.texts[2:] == ["Great", "GREAT"]


def test_sentence_pairs_are_varied_on_both_sides():
    data = TaskData("t", "classification", "train", DATA, texts=[("good", "movie")], labels=[0], label_names=["a", "b"])
    out = augment.augment(data, _near(), copies=10, p=1.0)
    assert out.texts[1:] == [("great", "film")]


def test_ner_variants_keep_tags_aligned_and_swap_mentions_within_their_type():
    texts = [["Storm", "hit", "New", "York", "and", "Bob"], ["good", "Paris", "film"], ["Ann", "Lee", "said"]]
    tags = [["O", "O", "B-loc", "I-loc", "O", "B-per"], ["O", "B-loc", "O"], ["B-per", "I-per", "O"]]
    data = TaskData("t", "ner", "train", DATA, texts=texts, labels=tags, label_names=["O", "B-loc", "I-loc",
                                                                                      "B-per", "I-per"])
    out = augment.augment(data, _near(), copies=20, p=0.5, seed=0)
    assert len(out) > len(data)
    mentions = {"loc": {("New", "York"), ("Paris",)}, "per": {("Bob",), ("Ann", "Lee")}}
    for words, row in zip(out.texts[3:], out.labels[3:]):
        assert len(words) == len(row)
        for start, end, kind in augment._spans(row):
            if kind is None:  # outside mentions: the word or its neighbour
                assert words[start] in {"Storm", "Rain", "hit", "and", "good", "great", "film", "said"}
            else:
                assert row[start] == f"B-{kind}" and all(t == f"I-{kind}" for t in row[start + 1:end])
                assert tuple(words[start:end]) in mentions[kind]
    first = [words for words in out.texts[3:] if words[1] == "hit"]  # the first sentence's variants
    assert any(words[2:3] == ["Paris"] for words in first)  # its location swapped for the other sentence's
    assert any(words[-1] in {"Ann", "Lee"} for words in first)  # its person for a two-word one


def test_recovery_distils_on_the_variants_and_records_them(checkpoints, tmp_path):
    teacher = tmp_path / "teacher"
    finetune(FinetuneOptions(checkpoint=str(checkpoints["bert"]["none"]), task="glue:sst2", out=teacher,
                             budget=loop.Budget(steps=4), batch_size=16, data_dir=DATA, train_limit=64, dev_limit=32,
                             progress=False), log=lambda *a: None)
    options = RecoverOptions(task="glue:sst2", data_dir=DATA, train_limit=64, dev_limit=32, batch_size=16,
                             budget=loop.Budget(steps=3), progress=False, dev_checks=0, augment=3)
    _, record = recover_checkpoint(str(teacher), ["nonorm", "relu"], options, tmp_path / "out", log=lambda *a: None)
    assert record["recipe"]["augment"] == 3
    assert record["augmentation"]["originals"] == 64 and record["augmentation"]["copies"] == 3
    assert record["train_examples"] == 64 + record["augmentation"]["variants"] > 64


def test_neighbours_read_a_factored_table_as_the_vectors_it_computes():
    """A checkpoint factor-embeddings made has no ``.weight``: its vectors are what the module computes."""
    from transformers import BertConfig, BertModel

    from pocketbert.converter.weights.factored_table import factor

    model = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32))
    whole = model.get_input_embeddings().weight.detach().clone()
    assert torch.equal(augment.word_vectors(model.get_input_embeddings()), whole)
    factor(model, rank=8)
    vectors = augment.word_vectors(model.get_input_embeddings())
    assert vectors.shape == whole.shape
    assert torch.allclose(vectors, model.get_input_embeddings().dense(), atol=1e-6)
    assert not torch.equal(vectors, whole)  # rank 8 of 16: an approximation, read as it now is
