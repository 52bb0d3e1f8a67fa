"""Session-wide bundles for the runtime tests, each converted once from a seeded checkpoint.

* ``ner_bundle``: tiny random BERT with a CoNLL BIO head, ONNX + TFLite fp32.  A random 9-label head
  tags most tokens as some entity, so the real sentences yield thousands of B-/I- tags, stray I- tags,
  B-B neighbours and multi-piece words: every branch of the decoding.
* ``cls_bundle``: tiny random DistilBERT (no token_type_ids input), 3 labels, ONNX + TFLite, fp32 and
  int8-dynamic (`--int8 dynamic`: `auto` would ship whichever int8 method is fastest on the machine).
* ``minilm_bundle``: the real all-MiniLM-L6-v2 with the converter's seeded 2-label head, ONNX + TFLite
  (bucket 64: SST-2 dev sentences are at most 55 tokens).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketbert.converter.inputs.texts import read_texts
from pocketbert.converter.pipeline import ConvertOptions, convert

from ..conftest import DATA, build_checkpoint
from ..shared import once, worker_threads


def convert_bundle(checkpoint, out: Path, **kwargs) -> Path:
    kwargs.setdefault("verify_samples", 100)
    kwargs.setdefault("calibration_samples", 64)
    kwargs.setdefault("threads", worker_threads())
    options = ConvertOptions(checkpoint=str(checkpoint), out=out, measure_latency=False, data_dir=DATA, **kwargs)
    return convert(options).bundle


@pytest.fixture(scope="session")
def ner_bundle(checkpoints, tmp_path_factory) -> Path:
    return once(tmp_path_factory, "rt-ner",
                lambda work: convert_bundle(checkpoints["bert"]["ner"], work / "ner", formats="onnx,tflite"))


@pytest.fixture(scope="session")
def cls_bundle(checkpoints, tmp_path_factory) -> Path:
    return once(tmp_path_factory, "rt-cls",
                lambda work: convert_bundle(checkpoints["distilbert"]["classification"], work / "cls",
                                            formats="onnx,tflite", opts="int8", int8="dynamic"))


#: the real MiniLM's one bucket in every test that converts it (here and tests/test_tflite_metadata.py), so that one
#: export of the real model serves them all (the suite's export cache)
MINILM_BUCKET = 64


@pytest.fixture(scope="session")
def minilm_bundle(tmp_path_factory) -> Path:
    return once(tmp_path_factory, "rt-minilm",
                lambda work: convert_bundle("minilm", work / "minilm", formats="onnx,tflite", buckets=[MINILM_BUCKET]))


@pytest.fixture(scope="session")
def multilabel_bundle(tokenizer, tmp_path_factory) -> tuple[Path, Path]:
    """(checkpoint, ONNX bundle) of a multi-label head: the manifest's problem_type must reach the scores.
    (Regression's raw scores are checked against Hugging Face in the golden vectors.)"""
    def build(root):
        checkpoint = build_checkpoint(root / "checkpoint", "bert", tokenizer,
                                      labels=("sports", "politics", "tech", "arts"), seed=3,
                                      problem_type="multi_label_classification")
        return checkpoint, convert_bundle(checkpoint, root / "bundle", formats="onnx")
    return tuple(once(tmp_path_factory, "rt-multilabel", build))


@pytest.fixture(scope="session")
def conll_sentences() -> list[str]:
    return read_texts(DATA / "conll2003" / "dev.txt")


@pytest.fixture(scope="session")
def sst2_sentences() -> list[str]:
    return read_texts(DATA / "glue" / "SST-2" / "dev.tsv")
