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

Long texts run in overlapping windows; each token takes its scores from the window where it lies
farthest from a cut, and the stitched text is decoded once (:mod:`runtime.windows`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .errors import InputError
from .pipeline import Pipeline, softmax
from .tokenization import validate
from .windows import StitchedWindow, default_stride, stitched_rows

AGGREGATIONS = ("none", "simple", "first", "average", "max")


@dataclass(frozen=True)
class TokenizedWindow:
    """What decoding needs of one model input row."""

    ids: Sequence[int]
    tokens: Sequence[str]  # vocabulary form of each id (``##ing``)
    offsets: Sequence[tuple[int, int]]  # character span in the text, [start, end)
    special: Sequence[int]  # 1 for [CLS], [SEP], padding


class EncodingWindow:
    """A ``tokenizers`` Encoding read as a :class:`TokenizedWindow`: each list is fetched from the Rust
    side only when decoding needs it (a row whose tokens are all ``O`` needs no tokens or offsets)."""

    def __init__(self, encoding):
        self._encoding = encoding

    @functools.cached_property
    def ids(self) -> Sequence[int]:
        return self._encoding.ids

    @functools.cached_property
    def tokens(self) -> Sequence[str]:
        return self._encoding.tokens

    @functools.cached_property
    def offsets(self) -> Sequence[tuple[int, int]]:
        return self._encoding.offsets

    @functools.cached_property
    def special(self) -> Sequence[int]:
        return self._encoding.special_tokens_mask


@dataclass(frozen=True)
class Decoding:
    """Tokenizer facts decoding depends on."""

    labels: Sequence[str]
    unk_id: int | None
    word_aware: bool
    detokenize: Callable[[list[str]], str]


@dataclass
class _Token:
    """A non-special token: its best label and score (per-token argmax, done for all tokens at once)."""

    index: int
    word: str
    start: int
    end: int
    is_subword: bool
    label: int
    score: float


def tokens_of(text: str, window: TokenizedWindow, best: list[int], best_scores: list[float],
              how: Decoding, skip: frozenset[int] = frozenset()) -> list[_Token | None]:
    """Non-special tokens with their text span and whether each continues the previous word.

    A token whose label is in ``skip`` is ``None``: it can only end what came before, so nothing else
    about it is needed (most tokens are ``O``, which is never reported)."""
    out: list[_Token | None] = []
    for idx, special in enumerate(window.special):
        if special:
            continue
        if best[idx] in skip:
            out.append(None)
            continue
        word = window.tokens[idx]
        start, end = window.offsets[idx]
        if how.unk_id is not None and window.ids[idx] == how.unk_id:
            word, is_subword = text[start:end], False
        elif how.word_aware:
            is_subword = len(word) != end - start
        else:
            is_subword = start > 0 and " " not in text[start - 1:start + 1]
        out.append(_Token(idx, word, start, end, is_subword=is_subword, label=best[idx], score=best_scores[idx]))
    return out


def _word(group: list[_Token], aggregation: str, probs: np.ndarray, how: Decoding) -> dict:
    """The tokens of one word -> one labelled word (``first``/``average``/``max``)."""
    if aggregation == "first" or len(group) == 1:
        label, score = group[0].label, group[0].score
    elif aggregation == "max":
        top = max(group, key=lambda t: t.score)  # the first of equally confident tokens, as max() picks
        label, score = top.label, top.score
    elif aggregation == "average":
        mean = np.nanmean(probs[[t.index for t in group]], axis=0)
        label = int(mean.argmax())
        score = float(mean[label])
    else:
        raise ValueError(f"not a word aggregation: {aggregation!r}")
    return {"entity": how.labels[label], "score": score, "word": how.detokenize([t.word for t in group]),
            "start": group[0].start, "end": group[-1].end}


def _words(tokens: list[_Token], aggregation: str, probs: np.ndarray, how: Decoding) -> list[dict]:
    words, group = [], []
    for token in tokens:
        if group and not token.is_subword:
            words.append(_word(group, aggregation, probs, how))
            group = []
        group.append(token)
    if group:
        words.append(_word(group, aggregation, probs, how))
    return words


@functools.lru_cache(maxsize=4096)
def split_tag(label: str) -> tuple[str, str]:
    """``B-PER`` -> (B, PER); ``I-PER`` -> (I, PER); a label without prefix continues, like ``I-``."""
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def _group(entities: list[dict], how: Decoding) -> dict:
    return {"entity_group": entities[0]["entity"].split("-", 1)[-1],
            "score": sum(e["score"] for e in entities) / len(entities),
            "word": how.detokenize([e["word"] for e in entities]),
            "start": entities[0]["start"], "end": entities[-1]["end"]}


def group_entities(entities: list[dict | None], how: Decoding, ignore_labels: Sequence[str] = ()) -> list[dict]:
    """Adjacent entities of one tag -> groups; groups whose tag is ignored (``O``) are never built.
    ``None`` stands for a token of an ignored tag: it ends the current group and starts none."""
    groups, current = [], []

    def close():
        if current[0]["entity"].split("-", 1)[-1] not in ignore_labels:
            groups.append(_group(current, how))

    for entity in entities:
        if entity is None:  # a token that was never going to be reported: it ends the current entity
            if current:
                close()
            current = []
            continue
        if current:
            bi, tag = split_tag(entity["entity"])
            if tag != split_tag(current[-1]["entity"])[1] or bi == "B":
                close()
                current = []
        current.append(entity)
    if current:
        close()
    return groups


class Scored(NamedTuple):
    """One window's token probabilities, each token's best label and that label's probability."""

    probs: np.ndarray
    best: list[int]
    best_scores: list[float]


def score(rows: Sequence[np.ndarray]) -> list[Scored]:
    """Logits ``[tokens, labels]`` of many windows -> :class:`Scored` each, with one softmax over all of
    them: per-window numpy calls on a dozen tokens cost more than the arithmetic."""
    if not rows:
        return []
    probs = softmax(np.concatenate(rows))
    best = probs.argmax(axis=-1)
    best_list, scores = best.tolist(), probs[np.arange(len(best)), best].tolist()
    out, start = [], 0
    for row in rows:
        end = start + len(row)
        out.append(Scored(probs[start:end], best_list[start:end], scores[start:end]))
        start = end
    return out


def decode(text: str, window: TokenizedWindow, logits: np.ndarray | Scored, aggregation: str, how: Decoding,
           ignore_labels: Sequence[str] = ("O",), index_offset: int = 0) -> list[dict]:
    """Logits ``[tokens, labels]`` (or their :func:`score`) of one window -> entities (``index_offset``
    shifts ``index`` for windows after the first, so it counts tokens of the whole text)."""
    probs, labels, best_scores = logits if isinstance(logits, Scored) else score([logits])[0]
    skip = _never_reported(tuple(how.labels), aggregation, tuple(ignore_labels))
    if skip and skip.issuperset(labels):  # nothing to report (a sentence without entities)
        return []
    tokens = tokens_of(text, window, labels, best_scores, how=how, skip=skip)
    if aggregation in ("none", "simple"):
        entities = [None if t is None else
                    {"entity": how.labels[t.label], "score": t.score, "index": t.index + index_offset,
                     "word": t.word, "start": t.start, "end": t.end} for t in tokens]
        if aggregation == "none":
            return [e for e in entities if e is not None and e["entity"] not in ignore_labels]
    else:
        entities = _words(tokens, aggregation, probs, how)
    if aggregation != "none":
        entities = group_entities(entities, how, ignore_labels)
    return [e for e in entities if e.get("entity") not in ignore_labels and e.get("entity_group") not in ignore_labels]


@functools.lru_cache(maxsize=64)
def _never_reported(labels: tuple[str, ...], aggregation: str, ignore_labels: tuple[str, ...]) -> frozenset[int]:
    """Label ids whose tokens cannot appear in the result, so decoding skips them: per token (``none``),
    a label that is ignored; grouped by token (``simple``), a label whose group tag is ignored whichever
    way it is read (``B-``/``I-`` prefix or not).  Word aggregations need every token (a word's label
    is decided over all of its tokens)."""
    if aggregation == "none":
        return frozenset(i for i, label in enumerate(labels) if label in ignore_labels)
    if aggregation == "simple":
        return frozenset(i for i, label in enumerate(labels)
                         if split_tag(label)[1] in ignore_labels and label.split("-", 1)[-1] in ignore_labels)
    return frozenset()


def decode_text(text: str, windows: Sequence[TokenizedWindow], logits: Sequence[np.ndarray | Scored], aggregation: str,
                how: Decoding, ignore_labels: Sequence[str] = ("O",), step: int = 0) -> list[dict]:
    """All windows of one text -> its entities.  ``step``: tokens between window starts.  Several windows
    are stitched into one sequence of the whole text (:func:`windows.stitched_rows`) and decoded once, so
    ``index`` counts tokens of the whole text and no entity is cut where windows meet."""
    if len(windows) == 1:
        return decode(text, windows[0], logits[0], aggregation, how=how, ignore_labels=ignore_labels)
    scored = [r if isinstance(r, Scored) else score([r])[0] for r in logits]
    window = StitchedWindow(windows, stitched_rows([w.special for w in windows], step))
    return decode(text, window, _gathered(scored, window.rows), aggregation, how=how, ignore_labels=ignore_labels)


def _gathered(scored: Sequence[Scored], rows: list[tuple[int, int]]) -> Scored:
    """Rows ``(window, row)`` of several windows' scores -> the scores of the stitched window."""
    base = np.cumsum([0] + [len(s.best) for s in scored]).tolist()
    flat = [base[k] + i for k, i in rows]
    best = [label for s in scored for label in s.best]
    scores = [value for s in scored for value in s.best_scores]
    return Scored(np.concatenate([s.probs for s in scored])[flat], [best[f] for f in flat], [scores[f] for f in flat])


def ignored_labels(ignore_labels) -> tuple[str, ...]:
    """``ignore_labels`` as given -> the labels to drop.  ``None`` is the default ``("O",)``, as in Hugging
    Face's pipeline; a bare string is one label (``"O"`` = ``["O"]``; Hugging Face would test substrings)."""
    if ignore_labels is None:
        return ("O",)
    if isinstance(ignore_labels, str):
        return (ignore_labels,)
    try:
        labels = tuple(ignore_labels)
    except TypeError:
        labels = None
    if labels is None or not all(isinstance(label, str) for label in labels):
        raise InputError(f"ignore_labels must be label names (a list of strings), not {ignore_labels!r}",
                         'pass e.g. ignore_labels=["O"], or ignore_labels=[] to keep every label')
    return labels


class TokenClassificationPipeline(Pipeline):
    task = "ner"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.decoding = Decoding(labels=self.labels, unk_id=self.encoder.unk_id, word_aware=self.encoder.word_aware,
                                 detokenize=self.encoder.detokenize)
        self.default_stride = default_stride(self.max_length)

    def __call__(self, inputs, aggregation: str = "simple", *, stride: int | None = None,
                 ignore_labels: Sequence[str] | str | None = ("O",)):
        """Entities of a text (a list of dicts) or of each text in a list (a list of lists).

        ``aggregation="none"`` gives Hugging Face's per-token ``{entity, score, index, word, start,
        end}``; the others give ``{entity_group, score, word, start, end}``.  ``start``/``end`` are
        character offsets into the text as given.  Texts longer than the model's maximum are run in
        windows overlapping by ``stride`` tokens (default: a quarter of the maximum).  ``ignore_labels``:
        results with these labels are dropped (``None``: the default ``["O"]``; a string: that one label).
        """
        if aggregation not in AGGREGATIONS:
            raise InputError(f"unknown aggregation {aggregation!r}", f"use one of: {', '.join(AGGREGATIONS)}")
        ignore_labels = ignored_labels(ignore_labels)
        texts = validate(inputs, pairs=False)
        strings = [a for a, _ in texts.items]
        if stride is not None and type(stride) is not int:  # "3" or True: a typo, not a token count
            raise InputError(f"stride must be a whole number of tokens or None, not {stride!r}",
                             f"pass e.g. stride={self.default_stride}, or leave it out for the default")
        stride = self.default_stride if stride is None else stride
        per_text = self.encoder.windows(strings, stride)
        rows = [(w.ids, w.type_ids) for windows in per_text for w in windows]
        logits = iter(score(self._logits(rows)))
        step = self.max_length - self.encoder.specials_added - stride
        results = []
        for text, encodings in zip(strings, per_text):
            windows = [EncodingWindow(e) for e in encodings]
            rows = [next(logits) for _ in windows]
            results.append(decode_text(text, windows, rows, aggregation, how=self.decoding,
                                       ignore_labels=ignore_labels, step=step))
        return results[0] if texts.single else results
