"""Token classification (NER): Hugging Face's token-classification decoding, in numpy.

Mirrors ``transformers.pipelines.token_classification`` (transformers 5) step for step, so that the
same logits give the same entities, spans and scores:

1. softmax per token; special tokens are skipped;
2. each token's text span comes from the tokenizer's offsets; a token is a *subword* (continues the
   previous word) when its text is not as long as its vocabulary form (``##ing`` vs ``ing``), the
   rule for tokenizers with a continuing-subword prefix; others use a whitespace heuristic. ``[UNK]``
   shows the original text and always starts a word;
3. ``none``: one result per token; ``simple``: tokens grouped; ``first``/``average``/``max``: tokens of
   one word first agree on one label (the first token's, the average scores', or the most confident
   token's), then words are grouped;
4. grouping: a ``B-X`` tag starts an entity, ``I-X`` continues an adjacent ``X`` (or starts one: a stray
   ``I-`` is its own entity), a tag without prefix acts as ``I-``; so BIO (IOB2) and IOB1 decode alike;
5. results labelled ``O`` (``ignore_labels``) are dropped.

Long texts run in overlapping windows whose entities are merged (:mod:`runtime.windows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .pipeline import Pipeline
from .tokenization import validate
from .windows import default_stride, merge_overlapping

AGGREGATIONS = ("none", "simple", "first", "average", "max")


@dataclass(frozen=True)
class TokenizedWindow:
    """What decoding needs of one model input row."""

    ids: Sequence[int]
    tokens: Sequence[str]  # vocabulary form of each id (``##ing``)
    offsets: Sequence[tuple[int, int]]  # character span in the text, [start, end)
    special: Sequence[int]  # 1 for [CLS], [SEP], padding


@dataclass(frozen=True)
class Decoding:
    """Tokenizer facts decoding depends on."""

    labels: Sequence[str]
    unk_id: int | None
    word_aware: bool
    detokenize: Callable[[list[str]], str]


def softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float32, copy=False)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def pre_entities(text: str, window: TokenizedWindow, scores: np.ndarray, how: Decoding) -> list[dict]:
    """One entry per non-special token: its scores, span, vocabulary form and whether it is a subword."""
    out = []
    for idx, token_scores in enumerate(scores):
        if window.special[idx]:
            continue
        word = window.tokens[idx]
        start, end = window.offsets[idx]
        reference = text[start:end]
        if how.word_aware:
            is_subword = len(word) != len(reference)
        else:
            is_subword = start > 0 and " " not in text[start - 1:start + 1]
        if how.unk_id is not None and window.ids[idx] == how.unk_id:
            word, is_subword = reference, False
        out.append({"word": word, "scores": token_scores, "start": start, "end": end, "index": idx,
                    "is_subword": is_subword})
    return out


def _word(group: list[dict], aggregation: str, how: Decoding) -> dict:
    """The tokens of one word -> one labelled word (``first``/``average``/``max``)."""
    if aggregation == "first":
        row = group[0]["scores"]
    elif aggregation == "max":
        row = max(group, key=lambda e: e["scores"].max())["scores"]
    elif aggregation == "average":
        row = np.nanmean(np.stack([e["scores"] for e in group]), axis=0)
    else:
        raise ValueError(f"not a word aggregation: {aggregation!r}")
    best = int(row.argmax())
    return {"entity": how.labels[best], "score": row[best], "word": how.detokenize([e["word"] for e in group]),
            "start": group[0]["start"], "end": group[-1]["end"]}


def _words(pre: list[dict], aggregation: str, how: Decoding) -> list[dict]:
    words, group = [], []
    for entity in pre:
        if group and not entity["is_subword"]:
            words.append(_word(group, aggregation, how))
            group = []
        group.append(entity)
    if group:
        words.append(_word(group, aggregation, how))
    return words


def split_tag(label: str) -> tuple[str, str]:
    """``B-PER`` -> (B, PER); ``I-PER`` -> (I, PER); a label without prefix continues, like ``I-``."""
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def _group(entities: list[dict], how: Decoding) -> dict:
    scores = np.array([e["score"] for e in entities])
    return {"entity_group": entities[0]["entity"].split("-", 1)[-1], "score": np.nanmean(scores),
            "word": how.detokenize([e["word"] for e in entities]),
            "start": entities[0]["start"], "end": entities[-1]["end"]}


def group_entities(entities: list[dict], how: Decoding) -> list[dict]:
    groups, current = [], []
    for entity in entities:
        if current:
            bi, tag = split_tag(entity["entity"])
            if tag != split_tag(current[-1]["entity"])[1] or bi == "B":
                groups.append(_group(current, how))
                current = []
        current.append(entity)
    if current:
        groups.append(_group(current, how))
    return groups


def decode(text: str, window: TokenizedWindow, logits: np.ndarray, aggregation: str, how: Decoding,
           ignore_labels: Sequence[str] = ("O",), index_offset: int = 0) -> list[dict]:
    """Logits ``[tokens, labels]`` of one window -> entities (``index_offset`` shifts ``index`` for
    windows after the first, so it counts tokens of the whole text)."""
    pre = pre_entities(text, window, softmax(logits), how)
    if aggregation in ("none", "simple"):
        entities = []
        for p in pre:
            best = int(p["scores"].argmax())
            entities.append({"entity": how.labels[best], "score": p["scores"][best], "index": p["index"] + index_offset,
                             "word": p["word"], "start": p["start"], "end": p["end"]})
    else:
        entities = _words(pre, aggregation, how)
    if aggregation != "none":
        entities = group_entities(entities, how)
    out = []
    for e in entities:
        if e.get("entity") in ignore_labels or e.get("entity_group") in ignore_labels:
            continue
        e["score"] = float(e["score"])
        out.append(e)
    return out


def decode_text(text: str, windows: Sequence[TokenizedWindow], logits: Sequence[np.ndarray], aggregation: str,
                how: Decoding, ignore_labels: Sequence[str] = ("O",), step: int = 0) -> list[dict]:
    """All windows of one text -> its entities.  ``step``: tokens between window starts (``index`` of
    window ``k`` counts from ``k * step``); entities of several windows are merged."""
    entities = []
    for k, (window, row) in enumerate(zip(windows, logits)):
        entities += decode(text, window, row, aggregation, how, ignore_labels, index_offset=k * step)
    return merge_overlapping(entities) if len(windows) > 1 else entities


class TokenClassificationPipeline(Pipeline):
    task = "ner"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.decoding = Decoding(labels=self.labels, unk_id=self.encoder.unk_id, word_aware=self.encoder.word_aware,
                                 detokenize=self.encoder.detokenize)
        self.default_stride = default_stride(self.max_length)

    def __call__(self, inputs, aggregation: str = "simple", *, stride: int | None = None,
                 ignore_labels: Sequence[str] = ("O",)):
        """Entities of a text (a list of dicts) or of each text in a list (a list of lists).

        ``aggregation="none"`` gives Hugging Face's per-token ``{entity, score, index, word, start,
        end}``; the others give ``{entity_group, score, word, start, end}``.  ``start``/``end`` are
        character offsets into the text as given.  Texts longer than the model's maximum are run in
        windows overlapping by ``stride`` tokens (default: a quarter of the maximum).
        """
        if aggregation not in AGGREGATIONS:
            raise InputError(f"unknown aggregation {aggregation!r}", f"use one of: {', '.join(AGGREGATIONS)}")
        texts = validate(inputs, pairs=False)
        strings = [a for a, _ in texts.items]
        stride = self.default_stride if stride is None else stride
        per_text = self.encoder.windows(strings, stride)
        rows = [(w.ids, w.type_ids) for windows in per_text for w in windows]
        logits = iter(self._logits(rows))
        step = self.max_length - self.encoder.specials_added - stride
        results = []
        for text, encodings in zip(strings, per_text):
            windows = [TokenizedWindow(e.ids, e.tokens, e.offsets, e.special_tokens_mask) for e in encodings]
            rows = [next(logits) for _ in windows]
            results.append(decode_text(text, windows, rows, aggregation, self.decoding, ignore_labels, step))
        return results[0] if texts.single else results
