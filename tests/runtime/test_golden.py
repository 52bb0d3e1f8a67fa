"""The runtime against the golden vectors (tests/golden, written from Hugging Face's output)."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from pocketbert.converter.builtin import BUILTIN
from pocketbert.runtime.classification import ranked, score_function, scores
from pocketbert.runtime.ner import Decoding, TokenizedWindow, decode_text
from pocketbert.runtime.tokenization import TextEncoder
from pocketbert.runtime.windows import window_starts

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SETTINGS = json.loads((GOLDEN / "tokenizers.json").read_text(encoding="utf-8"))
SCORE_TOLERANCE = 1e-6  # float32 softmax of the same logits; other languages' exp() may differ in the last bits


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines()]


TOKENIZATION, NER, CLASSIFICATION = _records("tokenization.jsonl"), _records("ner.jsonl"), \
    _records("classification.jsonl")


@functools.cache
def encoder(name: str, source: str, max_length: int) -> TextEncoder:
    """``tokenizer.json`` as a bundle ships it (minilm only), or vocab.txt + settings (the Android way)."""
    model_dir = BUILTIN["minilm"].path()
    settings = SETTINGS[name]
    if source == "tokenizer.json":
        return TextEncoder.from_file(model_dir / "tokenizer.json", settings, max_length)
    return TextEncoder.from_vocab(model_dir / "vocab.txt", settings, max_length)


def _sources(name: str) -> list[str]:
    return ["tokenizer.json", "vocab.txt"] if name == "minilm-uncased" else ["vocab.txt"]


def test_golden_vocab_is_the_bundled_one():
    digest = hashlib.sha256((BUILTIN["minilm"].path() / "vocab.txt").read_bytes()).hexdigest()
    assert {s["vocab_sha256"] for s in SETTINGS.values()} == {digest}
    assert len(TOKENIZATION) > 40 and len(NER) > 40 and len(CLASSIFICATION) > 20


def _case_id(r: dict) -> str:
    return f"{r['tokenizer']}-{r['text'][:18]!r}-{r['max_length']}"


@pytest.mark.parametrize("record", TOKENIZATION, ids=_case_id)
def test_tokenization_matches_golden(record):
    name, text, pair, max_length, stride = (record[k] for k in ("tokenizer", "text", "text_pair", "max_length",
                                                                "stride"))
    for source in _sources(name):
        enc = encoder(name, source, max_length)
        got = enc.windows([text], stride)[0] if stride is not None else enc.encode([(text, pair)])
        assert len(got) == len(record["windows"]), source
        for g, want in zip(got, record["windows"]):
            assert g.ids == want["input_ids"], source
            assert g.tokens == want["tokens"], source
            assert g.type_ids == want["token_type_ids"], source
            assert g.special_tokens_mask == want["special_tokens_mask"], source
            assert [list(o) for o in g.offsets] == want["offsets"], source
            assert want["attention_mask"] == [1] * len(g.ids)
        if stride is not None:  # windows.window_starts (the index arithmetic of NER windows) agrees
            full = encoder(name, source, 100_000).encode([(text, None)])[0].ids[1:-1]
            content = max_length - 2
            starts = window_starts(len(full), content, stride)
            assert len(starts) == len(got) > 1
            assert [w.ids[1:-1] for w in got] == [full[s:s + content] for s in starts]


def _compare_entities(got: list[dict], want: list[dict], tolerance: float) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert set(g) == set(w)
        assert {k: v for k, v in g.items() if k != "score"} == {k: v for k, v in w.items() if k != "score"}
        assert abs(g["score"] - w["score"]) <= tolerance


def _ner_inputs(record: dict):
    """A golden NER record -> (Decoding, windows, logits per window, window step), as the pipeline has them."""
    name = record["tokenizer"]
    enc = encoder(name, "vocab.txt", record["max_length"])
    how = Decoding(labels=record["labels"], unk_id=SETTINGS[name]["special_tokens"]["unk"]["id"],
                   word_aware=enc.word_aware, detokenize=enc.detokenize)
    windows = [TokenizedWindow(w["input_ids"], w["tokens"], [tuple(o) for o in w["offsets"]],
                               w["special_tokens_mask"]) for w in record["windows"]]
    logits = [np.array(w["logits"], dtype=np.float32) for w in record["windows"]]
    return how, windows, logits, record["max_length"] - 2 - (record["stride"] or 0)


@pytest.mark.parametrize("record", NER, ids=lambda r: f"{r['scheme']}-{_case_id(r)}")
def test_ner_decoding_matches_golden(record):
    how, windows, logits, step = _ner_inputs(record)
    for aggregation, want in record["expected"].items():
        got = decode_text(record["text"], windows, logits, aggregation, how, step=step)
        _compare_entities(got, want, SCORE_TOLERANCE)


def test_ner_golden_covers_the_hard_cases():
    """The golden file is only worth something if it holds the cases that break decoders."""
    tags = [e["entity"] for r in NER for e in r["expected"].get("none", [])]
    assert sum(t.startswith("B-") for t in tags) > 50 and sum(t.startswith("I-") for t in tags) > 50
    assert any(t in ("PER", "ORG", "LOC", "MISC") for t in tags)  # labels without a prefix
    words = [e["word"] for r in NER for e in r["expected"]["first"]]
    assert any(" " in w for w in words)  # multi-word entities
    assert sum(len(r["windows"]) > 1 for r in NER) >= 3
    simple = [e for r in NER for e in r["expected"]["simple"]]
    first = [e for r in NER for e in r["expected"]["first"]]
    assert simple != first  # word aggregation changed something


@pytest.mark.parametrize("record", CLASSIFICATION, ids=lambda r: f"{r['problem_type']}-{len(r['labels'])}")
def test_classification_matches_golden(record):
    labels = record["labels"]
    row = scores(np.array([record["logits"]], dtype=np.float32), score_function(record["problem_type"],
                                                                                len(labels)))[0]
    expected = record["expected"]
    best = ranked(row, labels, legacy=True)
    assert best["label"] == expected["top_k_unset"]["label"]
    assert abs(best["score"] - expected["top_k_unset"]["score"]) <= SCORE_TOLERANCE
    for key, top_k in (("top_k_2", 2), ("top_k_all", None)):
        got = ranked(row, labels, top_k)
        assert [g["label"] for g in got] == [w["label"] for w in expected[key]]
        assert np.allclose([g["score"] for g in got], [w["score"] for w in expected[key]], atol=SCORE_TOLERANCE)


@pytest.mark.parametrize("record", NER[::3], ids=lambda r: f"{r['scheme']}-{_case_id(r)}")
def test_ner_skipping_ignored_tokens_changes_nothing(record, monkeypatch):
    """Decoding skips tokens whose label can never be reported: with any ``ignore_labels`` the result
    must equal decoding every token."""
    from pocketbert.runtime import ner

    how, windows, logits, step = _ner_inputs(record)
    tags = sorted({label.split("-", 1)[-1] for label in record["labels"]} - {"O"})
    cases = [(aggregation, ignored) for aggregation in ner.AGGREGATIONS
             for ignored in [("O",), (), ("O", tags[0]), (tags[-1],)]]
    skipping = [decode_text(record["text"], windows, logits, a, how, i, step) for a, i in cases]
    monkeypatch.setattr(ner, "_never_reported", lambda *args: frozenset())  # every token decoded
    for (aggregation, ignored), got in zip(cases, skipping):
        assert got == decode_text(record["text"], windows, logits, aggregation, how, ignored, step), \
            (aggregation, ignored)
    assert any(skipping)  # the records hold entities: the comparison is not between empty lists
