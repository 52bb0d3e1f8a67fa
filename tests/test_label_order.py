"""Label names in a data file map through the model's own label order (config.json id2label), not the sorted order
the file's names are numbered in: a checkpoint whose labels are not sorted is scored and trained unswapped."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from transformers import AutoModelForSequenceClassification

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.training import checkpoint_job as job
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune

from .conftest import build_checkpoint

LABELS = ("positive", "negative")  # not sorted: id 0 is "positive"
TEXTS = ["a charming film", "a warm story", "funny and kind", "dull and slow"]
IDS = [0, 0, 0, 1]  # three positive, one negative: always answering "positive" scores 75


@pytest.fixture(scope="module")
def always_positive(tmp_path_factory, tokenizer):
    """A tiny classifier with labels [positive, negative] whose head answers id 0 ("positive") for every text."""
    path = build_checkpoint(tmp_path_factory.mktemp("label-order") / "ckpt", "bert", tokenizer, labels=LABELS)
    model = AutoModelForSequenceClassification.from_pretrained(path)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([5.0, -5.0]))
    model.save_pretrained(path)
    return path


def _tsv(path, labels):
    path.write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in zip(TEXTS, labels)),
                    encoding="utf-8")
    return path


def _accuracy(checkpoint, dev_file) -> float:
    loaded = loading.load(str(checkpoint))
    return job.score(loaded, load_task(str(dev_file), "dev"), 32)["accuracy"]


def test_named_labels_score_as_the_label_ids(always_positive, tmp_path):
    by_id = _tsv(tmp_path / "ids.tsv", IDS)
    by_name = _tsv(tmp_path / "names.tsv", [LABELS[i] for i in IDS])
    assert _accuracy(always_positive, by_id) == pytest.approx(75.0)
    assert _accuracy(always_positive, by_name) == pytest.approx(75.0)  # sorted numbering scored it 25


def test_names_match_the_models_labels_but_for_case(always_positive, tmp_path):
    shouted = _tsv(tmp_path / "shouted.tsv", [LABELS[i].upper() for i in IDS])
    assert _accuracy(always_positive, shouted) == pytest.approx(75.0)


def test_a_dev_file_with_some_of_the_names(always_positive, tmp_path):
    negatives = _tsv(tmp_path / "negatives.tsv", ["negative"] * len(TEXTS))
    assert _accuracy(always_positive, negatives) == pytest.approx(0.0)


def test_a_name_the_model_lacks_is_refused(always_positive, tmp_path):
    odd = _tsv(tmp_path / "odd.tsv", ["positive", "neutral", "negative", "positive"])
    with pytest.raises(ConverterInputError) as info:
        _accuracy(always_positive, odd)
    assert "'neutral'" in str(info.value) and "positive" in str(info.value)
    assert info.value.fix


def _finetune(checkpoint, train_file, out):
    # the same rows as a dev file of its own (the training file itself is refused as --dev): the label order, not
    # generalisation, is what these tests read from the scores
    dev = train_file.with_name("dev.tsv")
    shutil.copyfile(train_file, dev)
    options = FinetuneOptions(checkpoint=str(checkpoint), task=str(train_file), dev=str(dev), out=out,
                              budget=loop.Budget(steps=1), lr=1e-6, batch_size=4, max_length=32, progress=False)
    finetune(options, log=lambda *a: None)
    record = json.loads((out / "training.json").read_text(encoding="utf-8"))
    id2label = json.loads((out / "config.json").read_text(encoding="utf-8"))["id2label"]
    return record, [id2label[k] for k in sorted(id2label, key=int)]


def test_finetuning_a_trained_head_keeps_its_label_order(always_positive, tmp_path):
    train = _tsv(tmp_path / "train.tsv", [LABELS[i] for i in IDS])
    record, labels = _finetune(always_positive, train, tmp_path / "tuned")
    assert labels == list(LABELS)  # renumbering in sorted order swapped the trained head's labels
    assert record["dev_without_training"]["before_fine_tuning"] == pytest.approx(75.0)
    assert _accuracy(tmp_path / "tuned", train) == pytest.approx(75.0)


def test_a_new_head_takes_the_sorted_names_it_is_trained_on(tmp_path, tokenizer):
    bare = build_checkpoint(tmp_path / "bare", "bert", tokenizer, head="none")
    train = _tsv(tmp_path / "train.tsv", [LABELS[i] for i in IDS])
    record, labels = _finetune(bare, train, tmp_path / "tuned")
    assert labels == ["negative", "positive"]
    loaded = loading.load(str(tmp_path / "tuned"))
    features = load_task(str(train), "dev").encode(loaded.tokenizer, 32, loaded.labels)
    assert features.labels == [1, 1, 1, 0]
