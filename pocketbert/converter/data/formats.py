"""Which reader a user's data file needs, GLUE-format TSV or CoNLL, decided from its content.

Both formats may hold tabs (``token<TAB>tag`` is a common CoNLL layout), so neither the suffix nor a tab
decides.  The first lines are tried both ways:

* CoNLL: every token line has at least two columns, the same number each, and a tag in the last one
  (``O``, ``B-X``, ``I-X`` or IOBES ``E-X``/``S-X``); blank lines and ``-DOCSTART-`` separate sentences;
* GLUE TSV: a header naming a ``sentence`` (or ``sentence1``/``sentence2``, ``premise``/``hypothesis``, …)
  column, or CoLA's header-less four columns with a 0/1 label in the second.

One reading that works decides; when both work, the suffix breaks the tie (``.tsv``/``.csv``: TSV); when
neither does, the error says why each failed.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConverterInputError
from .conll import TAG_PREFIXES, tag_prefix
from .glue import PAIR_COLUMNS, read_lines

SAMPLE = 200  # lines looked at: enough to see a few sentences, cheap on a large corpus


def conll_problem(lines: list[str]) -> str | None:
    """Why ``lines`` are not CoNLL token lines, or None when they are."""
    width = None
    tokens = 0
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("-DOCSTART-"):
            continue
        cols = line.split()
        if len(cols) < 2:
            return f"line {number} ({line.strip()[:40]!r}) has one column, where CoNLL has the word and a tag"
        if width is not None and len(cols) != width:
            return f"line {number} has {len(cols)} columns where line(s) before it have {width}"
        width = len(cols)
        if tag_prefix(cols[-1]) not in TAG_PREFIXES:
            return (f"line {number} ends in {cols[-1][:30]!r}, not in a known scheme (O, B-X, I-X, or IOBES E-X/S-X): "
                    "the last column must be the tag")
        tokens += 1
    return None if tokens else "no token lines"


def tsv_problem(lines: list[str]) -> str | None:
    """Why ``lines`` are not a GLUE-format TSV, or None when they are."""
    first = lines[0].split("\t")
    header = [h.strip().lower() for h in first]
    if len(first) == 4 and not {"sentence", "label"} & set(header):
        labels = {line.split("\t")[1].strip() for line in lines if line.count("\t") == 3}
        if labels and labels <= {"0", "1"}:
            return None  # CoLA: source, label, original label, sentence; no header
        return "4 columns without a header, but the second column is not CoLA's 0/1 label"
    if "sentence" in header or any(a in header and b in header for a, b in PAIR_COLUMNS):
        return None
    shown = [h[:30] for h in first[:6]]
    return (f"the first line {shown!r} is not a header with a 'sentence' column (or a pair such as 'sentence1'/"
            "'sentence2', 'premise'/'hypothesis')")


def detect(path: Path, what: str = "data") -> str:
    """``"conll"`` or ``"tsv"``; an ConverterInputError naming both readings' problems when neither fits."""
    lines = read_lines(path, what)
    head = lines[:SAMPLE]
    content = [line for line in head if line.strip()]
    conll, tsv = conll_problem(head), tsv_problem(content)
    if conll is None and tsv is not None:
        return "conll"
    if tsv is None and conll is not None:
        return "tsv"
    if conll is None and tsv is None:
        return "tsv" if path.suffix.lower() in (".tsv", ".csv") else "conll"
    raise ConverterInputError(f"{what} file {str(path)!r} is neither a CoNLL file nor a GLUE-format TSV: as CoNLL, "
                              f"{conll}; as a GLUE TSV, {tsv}",
                              "give a CoNLL file (one token per line: the word first, the tag last; a blank line "
                              "between sentences) or a GLUE-format TSV (a header row with a 'sentence' column, or "
                              "'sentence1'/'sentence2', and a 'label' column)")
