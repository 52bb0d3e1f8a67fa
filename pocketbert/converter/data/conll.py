"""CoNLL-format NER: one token per line, the tag in the last column, blank lines between sentences.

``-DOCSTART-`` lines are skipped.  Tag schemes: IOB2 (every entity starts with ``B-``), the original
CoNLL-2003 IOB1 (``B-`` only between two adjacent entities of one type) and IOBES/BILOU; all are
converted to IOB2, the scheme the model is trained and scored in (seqeval, strict-free default).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConverterInputError
from .glue import read_lines

SCHEMES = ("auto", "iob1", "iob2", "iobes")
TAG_PREFIXES = ("O", "B", "I", "E", "S", "L", "U")


@dataclass
class Sentences:
    words: list[list[str]]
    tags: list[list[str]]  # IOB2
    scheme: str  # the scheme found in (or declared for) the file


def _split(tag: str) -> tuple[str, str]:
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    return (prefix, kind) if sep and kind else ("?", tag)


def tag_prefix(tag: str) -> str:
    """``O``, ``B``, ``I``, ``E``, … for a tag; ``?`` for anything that is not one."""
    return _split(tag)[0]


def detect_scheme(tags: list[list[str]]) -> str:
    prefixes = {_split(t)[0] for sentence in tags for t in sentence}
    if prefixes & {"E", "S", "L", "U"}:
        return "iobes"
    for sentence in tags:
        previous = "O"
        for tag in sentence:
            prefix, kind = _split(tag)
            if prefix == "I" and (previous == "O" or _split(previous)[1] != kind):
                return "iob1"  # an entity opened by I-: never in IOB2
            previous = tag
    return "iob2"


def to_iob2(sentence: list[str], scheme: str) -> list[str]:
    out, previous = [], "O"
    for tag in sentence:
        prefix, kind = _split(tag)
        if prefix == "O":
            out.append("O")
        elif scheme == "iobes":
            out.append(f"B-{kind}" if prefix in ("B", "S", "U") else f"I-{kind}")
        elif prefix == "I" and (previous == "O" or _split(previous)[1] != kind):
            out.append(f"B-{kind}")  # IOB1 (and stray IOB2 I-): I- that opens an entity
        else:
            out.append(f"{prefix}-{kind}")
        previous = tag
    return out


def read_conll(path: Path, scheme: str = "auto", what: str = "data") -> Sentences:
    if scheme not in SCHEMES:
        raise ConverterInputError(f"unknown tag scheme {scheme!r}", f"use one of {', '.join(SCHEMES)}")
    lines = read_lines(path, what)
    words: list[list[str]] = []
    tags: list[list[str]] = []
    sentence_words: list[str] = []
    sentence_tags: list[str] = []
    width = None
    for number, line in enumerate(lines + [""], 1):
        if not line.strip() or line.startswith("-DOCSTART-"):
            if sentence_words:
                words.append(sentence_words)
                tags.append(sentence_tags)
            sentence_words, sentence_tags = [], []
            continue
        cols = line.split()
        if len(cols) < 2:
            raise ConverterInputError(f"{str(path)!r} line {number}: one column ({line.strip()!r}); CoNLL lines need "
                                      "the word first and the tag last", "give a CoNLL file (word … tag per line)")
        if width is None:
            width = len(cols)
        elif len(cols) != width:
            raise ConverterInputError(f"{str(path)!r} line {number}: {len(cols)} columns where earlier lines have "
                                      f"{width}", "fix that line; every token line needs the same columns")
        if tag_prefix(cols[-1]) not in TAG_PREFIXES:
            raise ConverterInputError(f"{str(path)!r} line {number}: tag {cols[-1]!r} is not in a known scheme (O, "
                                      "B-X, I-X, or IOBES E-X/S-X)",
                                      "give a CoNLL file with IOB1, IOB2 or IOBES tags in the last column")
        sentence_words.append(cols[0])
        sentence_tags.append(cols[-1])
    if not words:
        raise ConverterInputError(f"{what} file {str(path)!r} holds no sentences",
                                  "give a CoNLL file with tagged tokens")
    found = detect_scheme(tags)
    declared = found if scheme == "auto" else scheme
    if scheme == "iob2" and found == "iob1":
        raise ConverterInputError(f"{str(path)!r} was declared IOB2 but has entities opened by I- (IOB1)",
                                  "pass --tag-scheme iob1 (or auto)")
    return Sentences(words, [to_iob2(t, declared) for t in tags], declared)
