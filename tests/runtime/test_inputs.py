"""Bad and awkward text input: valid texts get Hugging Face's results, invalid ones a runtime.errors error."""

from __future__ import annotations

import re
import warnings

import pytest
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, pipeline

from pocketbert import runtime
from pocketbert.runtime.errors import InputError

from .test_parity import assert_same_entities, hf_tokenizer

EDGE_TEXTS = ["", "   \t\n ", "bell\x07 nul\x00 del\x7f esc\x1b end", "zero\u200bwidth\u200d\ufeff",
              "I ❤️ NY 🗽🇺🇸 👩‍👩‍👧", "東京は日本の首都です", "Wait... what?!?! --", "x" * 300, "Cafe\u0301 Zu\u0308rich"]


@pytest.fixture(scope="module")
def ner(ner_bundle):
    return runtime.load(ner_bundle, precision="fp32")


@pytest.fixture(scope="module")
def clf(cls_bundle):
    return runtime.load(cls_bundle, precision="fp32")


@pytest.fixture(scope="module")
def hf_ner(checkpoints, ner_bundle):
    model = AutoModelForTokenClassification.from_pretrained(checkpoints["bert"]["ner"]).eval()
    return pipeline("token-classification", model=model, tokenizer=hf_tokenizer(ner_bundle, 128))


@pytest.fixture(scope="module")
def hf_clf(checkpoints, cls_bundle):
    model = AutoModelForSequenceClassification.from_pretrained(checkpoints["distilbert"]["classification"]).eval()
    return pipeline("text-classification", model=model, tokenizer=hf_tokenizer(cls_bundle, 128))


@pytest.mark.parametrize("aggregation", ["none", "simple", "first"])
def test_edge_texts_match_hf_ner(ner, hf_ner, aggregation):
    assert_same_entities(ner(EDGE_TEXTS, aggregation=aggregation), hf_ner(EDGE_TEXTS, aggregation_strategy=aggregation))
    assert ner("", aggregation=aggregation) == [] and ner("  \n", aggregation=aggregation) == []


def test_edge_texts_match_hf_classification(clf, hf_clf):
    got, want = clf(EDGE_TEXTS, top_k=None), hf_clf(EDGE_TEXTS, top_k=None)
    assert [[r["label"] for r in g] for g in got] == [[r["label"] for r in w] for w in want]
    assert max(abs(a["score"] - b["score"]) for g, w in zip(got, want) for a, b in zip(g, w)) < 1e-5


def test_100k_characters_ner_runs_in_windows(ner, ner_bundle, conll_sentences):
    """(Window parity with Hugging Face is in test_parity; its pipeline needs ~15 s for this text.)"""
    text = " ".join(conll_sentences[:2000])[:100_000]
    assert len(text) == 100_000
    got = ner(text, aggregation="simple", stride=32)
    assert len(got) > 5000 and got[-1]["end"] > 99_000  # entities up to the end: nothing was cut
    assert all(a["end"] <= b["start"] for a, b in zip(got, got[1:]))  # merged: sorted, no overlaps
    assert all(0 <= e["start"] < e["end"] <= len(text) for e in got)
    assert_same_entities([runtime.load(ner_bundle, backend="tflite", precision="fp32")(text, stride=32)], [got])


def test_100k_characters_classification_truncates_and_warns_once(clf, hf_clf):
    text = "a gripping , beautifully acted film . " * 2700
    assert len(text) > 100_000
    fresh = runtime.load(clf.bundle.path, precision="fp32")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = fresh(text, top_k=None)
        fresh([text, text])
    assert [w.category for w in caught] == [runtime.TruncationWarning]
    assert "128 tokens" in str(caught[0].message)
    want = hf_clf(text, top_k=None, truncation=True)  # Hugging Face cuts only when asked to
    assert [r["label"] for r in first] == [r["label"] for r in want]
    assert max(abs(a["score"] - b["score"]) for a, b in zip(first, want)) < 1e-5


@pytest.mark.parametrize("bad, where", [
    (["fine", None], "input 1 is NoneType"),
    (["fine", "ok", 3], "input 2 is int"),
    ([b"bytes"], "input 0 is bytes"),
    (None, "got None"),
    (42, "int, not text"),
    (["ok", "lone \ud800 surrogate"], "input 1 contains a lone surrogate U+D800 at character 5"),
    ("\udfff", "lone surrogate U+DFFF at character 0"),
])
def test_invalid_text_is_a_clear_error(ner, clf, bad, where):
    for pipe in (ner, clf):
        with pytest.raises(InputError, match=re.escape(where)) as info:
            pipe(bad)
        assert info.value.fix
        assert isinstance(info.value, ValueError)


def test_pairs_and_dicts(clf, ner):
    assert clf(("a", "b")) == clf({"text": "a", "text_pair": "b"}) == clf([("a", "b")])
    with pytest.raises(InputError, match="tuple of 3"):
        clf([("a", "b", "c")])
    with pytest.raises(InputError, match="single texts, not pairs"):
        ner(("a", "b"))
    with pytest.raises(InputError, match="without a 'text' key"):
        clf({"sentence": "a"})


def test_empty_list_gives_empty_list(ner, clf):
    assert ner([]) == [] and clf([]) == [] and clf([], top_k=2) == []


def test_bad_options_are_clear_errors(ner, clf):
    with pytest.raises(InputError, match="unknown aggregation 'maximum'"):
        ner("x", aggregation="maximum")
    with pytest.raises(InputError, match="stride 126"):
        ner("x", stride=126)
    with pytest.raises(InputError, match="top_k must be a positive integer"):
        clf("x", top_k=0)
    with pytest.raises(InputError, match="unknown function_to_apply 'relu'"):
        clf("x", function_to_apply="relu")


def test_result_shapes_follow_hugging_face(clf, ner):
    assert isinstance(clf("x"), list) and set(clf("x")[0]) == {"label", "score"}
    assert len(clf(["x", "y"])) == 2 and isinstance(clf(["x", "y"])[0], dict)
    assert len(clf("x", top_k=2)) == 2 and len(clf(["x", "y"], top_k=2)[1]) == 2
    assert len(clf("x", top_k=None)) == len(clf.labels)
    assert clf.logits(["x", ("y", "z")]).shape == (2, len(clf.labels)) and clf.logits([]).shape == (0, 3)
    assert clf("x", function_to_apply="none")[0]["score"] == pytest.approx(clf.logits("x").max())
    assert isinstance(ner("Peter Blackburn"), list) and isinstance(ner(["Peter Blackburn"])[0], list)
    assert set(ner("Peter Blackburn", aggregation="none")[0]) == {"entity", "score", "index", "word", "start", "end"}
