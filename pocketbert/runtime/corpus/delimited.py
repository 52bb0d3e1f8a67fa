"""CSV and TSV: a header row, then one record per row; results are the record with prediction columns added.

CSV follows RFC 4180 (quoted fields may hold commas and line breaks; the line reported for a record is
the one it starts on).  A quote that is never closed would swallow every line after it into one field,
and one closed by a stray quote that more text follows (``"a`` … ``b " c``) the lines between: that
record is a bad row of its first line only, and reading goes on at the line after it.  A header naming a
column twice is refused.  TSV is the
IANA text/tab-separated-values format: no quoting at all, so quotes in a text (common in GLUE's files)
are just characters, and a carriage return inside a line (which no field can hold) makes that line a
bad row, as one in an unquoted CSV field does.  Every field stays the exact string it was (an id
``007`` stays ``007``); bytes that are not UTF-8 are carried through unchanged in the other fields, and
make the row bad in the text field.  Predictions that are lists (top labels, entities) are JSON text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from .formats import Chunk, CorpusError
from .predict import MISSING

# strict: a closing quote followed by more text is an error, not a quote silently dropped with the field running on
DIALECTS = {"csv": {"delimiter": ",", "quoting": csv.QUOTE_MINIMAL, "lineterminator": "\n", "strict": True},
            "tsv": {"delimiter": "\t", "quoting": csv.QUOTE_NONE, "quotechar": None, "lineterminator": "\n"}}
UNCLOSED = "unclosed"  # a quoted field still open at the end of the file
STRAY = "stray"  # a quoted field closed by a quote that more text follows (a quote meant as a character)


def _lines(f, state: dict) -> Iterator[str]:
    """Decoded lines, advancing ``state['offset']`` by each line's bytes (the csv reader reads no further
    than the record it returns, so after a record the offset is where the next one starts).  The bytes of
    each line go to ``state['taken']``; ``state['eof']`` is set when the csv reader asks past the end, which
    it does inside a record only when a quoted field is still open."""
    for raw in f:
        state["offset"] += len(raw)
        state["taken"].append(len(raw))
        yield raw.decode("utf-8", "surrogateescape")
    state["eof"] = True


def _kind(exc: csv.Error) -> str | None:
    """UNCLOSED or STRAY for the errors the strict reader raises for them (None: another error)."""
    if "unexpected end of data" in str(exc):
        return UNCLOSED
    return STRAY if "expected after" in str(exc) else None


class DelimitedReader:
    unit = "line"

    def __init__(self, path: Path, text_field: str, pair_field: str | None, position: dict | None = None,
                 kind: str = "csv"):
        self.path, self.kind = Path(path), kind
        self.text_field, self.pair_field = text_field, pair_field
        # whole documents in one field: the csv module's default limit (128 KiB) would call them malformed
        csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
        self.position = position or self._header()
        self.header = self.position["header"]
        self.text_index = self._index(text_field)
        self.pair_index = self._index(pair_field) if pair_field else None

    def _header(self) -> dict:
        state = {"offset": 0, "taken": [], "eof": False}
        with open(self.path, "rb") as f:
            reader = csv.reader(_lines(f, state), **DIALECTS[self.kind])
            try:
                header = next(reader, None)
            except csv.Error as exc:
                if _kind(exc) != UNCLOSED:
                    raise CorpusError(f"{self.path}, line 1: the header row {self._unreadable(exc)}",
                                      "fix the header row: it names the columns") from None
                header, state["eof"] = [], True
            if state["eof"]:
                raise CorpusError(f"{self.path}, line 1: a quoted field of the header is never closed (it runs to "
                                  "the end of the file)", "close the quote in the header row")
            if not header:
                raise CorpusError(f"{self.path} is empty: a {self.kind.upper()} input needs a header row naming "
                                  "its columns", f"write a header such as id{DIALECTS[self.kind]['delimiter']}text")
            header[0] = header[0].removeprefix("\ufeff")
            twice = next((name for i, name in enumerate(header) if name in header[:i]), None)
            if twice is not None:  # which of the two would be the text? (and the results repeat the header)
                raise CorpusError(f"{self.path}, line 1: the header names the column {twice!r} twice",
                                  "give every column its own name in the header row")
            return {"offset": state["offset"], "line": reader.line_num, "header": header}

    def _index(self, name: str) -> int:
        if name not in self.header:
            raise CorpusError(f"{self.path} has no column {name!r} (its columns: {', '.join(self.header)})",
                              "name the column holding the text with --text-field (and --pair-field)")
        return self.header.index(name)

    def total(self) -> int:
        return self.path.stat().st_size

    def chunks(self, size: int) -> Iterator[Chunk]:
        rows, lines, problems = [], [], {}
        line = self.position["line"]  # the last line read
        for record, start, end, problem in self._records(self.position["offset"], line):
            if problem:
                problems[len(rows)] = problem
            rows.append(record)
            lines.append(start)
            line = end
            if len(rows) == size:
                yield self._chunk(rows, lines, problems, self._offset, line=line)
                rows, lines, problems = [], [], {}
        if rows:
            yield self._chunk(rows, lines, problems, self._offset, line=line)

    def _records(self, offset: int, line: int) -> Iterator[tuple[list[str], int, int, str | None]]:
        """(record, first line, last line, problem) from ``offset``; ``self._offset`` follows the records."""
        self._offset = offset
        with open(self.path, "rb") as f:
            while True:
                f.seek(offset)
                state = {"offset": offset, "taken": [], "eof": False}
                reader = csv.reader(_lines(f, state), **DIALECTS[self.kind])
                for record, start, end, broken in self._read(reader, state, line):
                    if broken:  # the csv reader cannot go on from here: start a new one after the bad record
                        # a quote never closed, or closed by a stray one lines later, took the lines after it:
                        # only its first line is the bad row, and the lines it took are read as rows again
                        taken = state["taken"][:1] if broken in (UNCLOSED, STRAY) else state["taken"]
                        offset, line = self._offset + sum(taken), start + len(taken) - 1
                        self._offset = offset
                        yield record, start, line, self._broken(broken, end)
                        break
                    self._offset = state["offset"]
                    if record:  # a blank line is no record
                        yield record, start, end, self._count(record)
                else:
                    return

    def _read(self, reader, state: dict, line: int):
        """(record, first line, last line, broken): ``broken`` is UNCLOSED, or why the record cannot be read."""
        while True:
            state["taken"].clear()
            where = line + reader.line_num + 1
            try:
                record = next(reader, None)
            except csv.Error as exc:
                yield [], where, line + reader.line_num, _kind(exc) or self._unreadable(exc)
                return
            if record is None:
                return
            end = line + reader.line_num
            yield record, end - len(state["taken"]) + 1, end, UNCLOSED if state["eof"] else None

    @staticmethod
    def _broken(broken: str, end: int) -> str:
        if broken == UNCLOSED:
            return f"a quoted field opened on this line is never closed: it runs to the end of the file (line {end})"
        if broken == STRAY:
            return (f"a quoted field opened on this line ends at a quote on line {end} that more text follows: the "
                    "lines between would be one field (a quote inside a quoted field is written twice, \"\")")
        return broken

    def _unreadable(self, exc: csv.Error) -> str:
        if "new-line" not in str(exc):
            return f"cannot be read as {self.kind.upper()}: {exc}"
        if self.kind == "tsv":  # no quoting: there is no way to put a line break in a TSV field
            return ("holds a carriage return (\\r) inside the line, and a TSV field cannot hold a line break "
                    "(TSV has no quoting): remove it or replace it with a space")
        return ("holds a carriage return (\\r) in an unquoted field: put that field in double quotes, or remove "
                "the carriage return")

    def _count(self, record: list[str]) -> str | None:
        if len(record) != len(self.header):
            return f"has {len(record)} fields, the header has {len(self.header)}"
        return None

    def _field(self, rows: list[list[str]], index: int) -> list:
        return [r[index] if index < len(r) else MISSING for r in rows]

    def _chunk(self, rows, lines, problems, offset, line) -> Chunk:
        pairs = None if self.pair_index is None else self._field(rows, self.pair_index)
        position = {"offset": offset, "line": line, "header": self.header}
        return Chunk(rows, lines, self._field(rows, self.text_index), pairs, position=position, done=offset,
                     problems=problems)

    @staticmethod
    def keep(rows: list, indices: list[int]) -> list:
        return [rows[i] for i in indices]


def cell(value) -> str:
    """A prediction as CSV text: strings as they are, numbers in Python's shortest form, lists as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


class DelimitedWriter:
    def __init__(self, kinds: dict[str, str], kind: str = "csv"):
        self.kinds, self.kind = kinds, kind

    def _text(self, records: list[list[str]]) -> bytes:
        buffer = io.StringIO()
        csv.writer(buffer, **DIALECTS[self.kind]).writerows(records)
        return buffer.getvalue().encode("utf-8", "surrogateescape")

    def begin(self, columns: list[str]) -> bytes:
        clash = [name for name in self.kinds if name in columns]
        if clash:
            raise CorpusError(f"the input already has a column {clash[0]!r}: the prediction would overwrite it",
                              "pass --prefix with another prefix for the prediction columns")
        return self._text([list(columns) + list(self.kinds)])

    def encode(self, rows: list[list[str]], predictions: dict[str, list]) -> bytes:
        columns = [predictions[name] for name in self.kinds]
        return self._text([row + [cell(c[i]) for c in columns] for i, row in enumerate(rows)])

    def encode_table(self, table, keep: list[int]) -> bytes:
        """Rows ``keep`` of a table that already carries its predictions (from Ray, every input column a string)."""
        columns = [table.column(name).to_pylist() for name in table.column_names]
        records = [[("" if v is None else cell(v)) for v in values] for values in zip(*columns)]
        return self._text([records[i] for i in keep])
