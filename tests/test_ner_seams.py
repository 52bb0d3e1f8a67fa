"""Long NER texts: a name never comes back split where two windows meet.

A sentence with a two-word name, repeated to ~20,000 characters, on the phone-sized NER demo (``ner-phone``,
its tflite:int4-dynamic file, the bundle the browser tests convert: ``web_bundles``; 64 tokens a window):
every repetition must give the entities the sentence gives alone in one window.  With the smallest overlap
(``stride=1``) every seam cuts something, and decoding each window apart (Hugging Face's ``stride`` merge)
splits "Emmanuel Macron" into two PER entities there; the runtime stitches the windows per token and decodes
the whole text once.
"""

from __future__ import annotations

import pytest

from pocketbert import runtime
from pocketbert.runtime.windows import token_sources

from .test_web_demo import web_bundles  # noqa: F401  (session fixture: the converted demo bundles)

SENTENCE = "Yesterday Emmanuel Macron met the press in Paris ."
NAME = "emmanuel macron"
LENGTH = 20_000


@pytest.fixture(scope="module")
def ner_phone(web_bundles):  # noqa: F811
    pipe = runtime.load(web_bundles["ner_phone"], backend="tflite", precision="int4-dynamic")
    assert pipe.max_length == 64
    return pipe


def repeated() -> tuple[str, int]:
    count = LENGTH // (len(SENTENCE) + 1) + 1
    return " ".join([SENTENCE] * count), count


def relative(entity: dict, shift: int) -> tuple:
    return entity["entity_group"], entity["word"], entity["start"] - shift, entity["end"] - shift


@pytest.mark.parametrize("stride", [None, 1])
@pytest.mark.parametrize("aggregation", ["simple", "first", "average", "max"])
def test_a_long_repeated_text_gives_every_repetition_the_single_window_entities(ner_phone, aggregation, stride):
    alone = [relative(e, 0) for e in ner_phone(SENTENCE, aggregation=aggregation)]
    assert ("PER", NAME, 10, 25) in alone  # the model finds the name whole in one window
    text, count = repeated()
    rows = ner_phone.encoder.windows([text], ner_phone.default_stride if stride is None else stride)[0]
    assert len(text) >= LENGTH and len(rows) > 50  # over fifty seams
    got = ner_phone(text, aggregation=aggregation, stride=stride)
    people = [e["word"] for e in got if e["entity_group"] == "PER"]
    assert people == [NAME] * count, f"{sum(w != NAME for w in people)} PER entities are not the whole name"
    per_repetition = [[] for _ in range(count)]
    for entity in got:
        per_repetition[entity["start"] // (len(SENTENCE) + 1)].append(entity)
    for k, entities in enumerate(per_repetition):
        assert [relative(e, k * (len(SENTENCE) + 1)) for e in entities] == alone, f"repetition {k}"


def test_each_token_comes_from_the_window_where_it_is_farthest_from_a_cut():
    # windows of 6, 6 and 4 text tokens, 4 apart: each overlap of 2 is split in its middle (the Android core's
    # and the web package's tests hold their implementations to the same answer)
    assert token_sources([6, 6, 4], 4) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 1), (1, 2), (1, 3), (1, 4),
                                           (2, 1), (2, 2), (2, 3)]
    # windows overlapping by more than half: the middle window owns what lies deepest inside it
    assert [k for k, _ in token_sources([4, 4, 4], 1)] == [0, 0, 0, 1, 2, 2]
    with pytest.raises(ValueError, match="uncovered"):
        token_sources([3, 3], 4)


def test_the_measured_choice_times_rows_the_bundle_takes(web_bundles, monkeypatch, tmp_path):  # noqa: F811
    """``backend="auto"`` times each artifact on one row: of the bundle's input length (64 here, its largest
    bucket), not of its tokenizer's 128, which no signature of this file takes."""
    from pocketbert.runtime import choice

    monkeypatch.delenv(choice.ENV, raising=False)  # measure, as a user's first load does
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pipe = runtime.load(web_bundles["ner_phone"], threads=1)
    info = pipe.info()["choice"]
    assert info["rule"] == "measured" and "one row of 64 tokens" in info["reason"]
    assert [e["word"] for e in pipe(SENTENCE) if e["entity_group"] == "PER"] == [NAME]
