"""GLUE-format TSV with labels: single sentences or pairs; class ids or a regression score.

Layouts (recognised from the header, as GLUE ships them):

* SST-2: ``sentence<TAB>label`` (test: ``index<TAB>sentence``, no labels)
* MRPC: ``Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String`` (UTF-8 BOM)
* STS-B: ten columns, ``sentence1``, ``sentence2`` and ``score``
* CoLA: no header, four columns ``source<TAB>label<TAB>original label<TAB>sentence``
* anything with ``sentence`` or ``sentence1``/``sentence2`` and a ``label``/``score``/``quality`` column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConverterInputError

Text = str | tuple[str, str]

LABEL_COLUMNS = ("label", "quality", "score", "gold_label")
PAIR_COLUMNS = [("sentence1", "sentence2"), ("#1 string", "#2 string"), ("question1", "question2"),
                ("question", "sentence"), ("premise", "hypothesis")]


@dataclass
class Rows:
    texts: list[Text]
    labels: list[str] | None  # raw label strings; None when the file has no label column (GLUE test sets)
    pairs: bool


def read_lines(path: Path, what: str) -> list[str]:
    if not path.is_file():
        raise ConverterInputError(f"{what} file {str(path)!r} does not exist" if not path.exists()
                                  else f"{what} path {str(path)!r} is not a file",
                                  "check the path, or use a short name (glue:sst2, conll2003) with --data-dir")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConverterInputError(f"{what} file {str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                  "convert it to UTF-8") from exc
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise ConverterInputError(f"{what} file {str(path)!r} is empty", "give a file with at least one example")
    return lines


def _column_error(path: Path, number: int, found: int, wanted: int) -> ConverterInputError:
    return ConverterInputError(f"{str(path)!r} line {number}: {found} tab-separated column(s), the header has {wanted}",
                               "fix that line (a stray tab or a missing field) or give a well-formed GLUE TSV")


def read_tsv(path: Path, what: str = "data") -> Rows:
    lines = read_lines(path, what)
    first = lines[0].split("\t")
    header = [h.strip().lower() for h in first]
    if len(first) == 4 and not {"sentence", "label"} & set(header):  # CoLA: no header row
        rows = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) != 4:
                raise _column_error(path, number, len(cols), 4)
            rows.append(cols)
        return Rows([r[3].strip() for r in rows], [r[1].strip() for r in rows], pairs=False)

    columns = None
    for a, b in PAIR_COLUMNS:
        if a in header and b in header:
            columns = (header.index(a), header.index(b))
            break
    if columns is None and "sentence" in header:
        columns = (header.index("sentence"),)
    if columns is None:
        raise ConverterInputError(f"{what} file {str(path)!r}: unrecognised TSV header {first!r}: no 'sentence' or "
                                  "'sentence1'/'sentence2' column",
                                  "give a GLUE-format TSV (header row with those columns)")
    label_column = next((header.index(c) for c in LABEL_COLUMNS if c in header), None)
    texts: list[Text] = []
    labels: list[str] = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cols = line.split("\t")
        # SST-2 train rows end in a space before the tab; MRPC/STS-B rows may carry extra trailing fields
        if len(cols) < len(header):
            raise _column_error(path, number, len(cols), len(header))
        texts.append(cols[columns[0]].strip() if len(columns) == 1
                     else (cols[columns[0]].strip(), cols[columns[1]].strip()))
        if label_column is not None:
            labels.append(cols[label_column].strip())
    if not texts:
        raise ConverterInputError(f"{what} file {str(path)!r} has a header but no rows", "give a file with examples")
    return Rows(texts, labels if label_column is not None else None, pairs=len(columns) == 2)
