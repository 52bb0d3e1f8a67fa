"""JSON Lines: one JSON object per line; results are the object with the prediction keys added.

The reader works on bytes, so the offset of every line is known: a resumed run seeks straight to the
first line after the last completed chunk.  Blank lines are not rows (they carry nothing to classify).

An output line is its input line, byte for byte, with the prediction keys spliced in before the closing
brace: a number such as ``1.10`` or ``1e400`` stays as written (decoding and re-encoding would make them
``1.1`` and ``Infinity``, the latter not JSON), and a UTF-8 byte order mark that starts the file starts
the output too.  NaN and Infinity in the input are not JSON, and an object with a key twice is ambiguous:
bad rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .formats import Chunk, CorpusError
from .predict import MISSING


BOM = b"\xef\xbb\xbf"


class JsonlReader:
    unit = "line"

    def __init__(self, path: Path, text_field: str, pair_field: str | None, position: dict | None = None):
        self.path, self.text_field, self.pair_field = Path(path), text_field, pair_field
        self.position = position or {"offset": 0, "line": 0}

    def total(self) -> int:
        """Progress total: bytes."""
        return self.path.stat().st_size

    def chunks(self, size: int) -> Iterator[Chunk]:
        offset, line = self.position["offset"], self.position["line"]
        rows, lines, problems = [], [], {}
        with open(self.path, "rb") as f:
            f.seek(offset)
            for raw in f:
                offset += len(raw)
                line += 1
                # a BOM starts the file, not the object: parsed without it, written back with it
                body = raw.removeprefix(BOM) if line == 1 else raw
                if not body.strip():
                    continue
                record, reason = _parse(body)
                if reason:
                    problems[len(rows)] = reason
                rows.append((record, raw))  # the bytes are what is written back
                lines.append(line)
                if len(rows) == size:
                    yield self._chunk(rows, lines, problems, offset, line=line)
                    rows, lines, problems = [], [], {}
        if rows:
            yield self._chunk(rows, lines, problems, offset, line=line)

    def _chunk(self, rows, lines, problems, offset, line) -> Chunk:
        texts = [_get(r, self.text_field) for r in rows]
        pairs = None if not self.pair_field else [_get(r, self.pair_field) for r in rows]
        return Chunk(rows, lines, texts, pairs, position={"offset": offset, "line": line}, done=offset,
                     problems=problems)

    @staticmethod
    def keep(rows: list, indices: list[int]) -> list:
        return [rows[i] for i in indices]


def _get(row: tuple, name: str):
    record = row[0]
    return MISSING if record is None else record.get(name, MISSING)


def _not_json(literal: str):
    raise ValueError(f"holds {literal}, which is not JSON (no JSON number is NaN or infinite)")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """An object whose keys are distinct: with ``{"text": "a", "text": "b"}`` readers disagree on which
    value counts (Python keeps the last), so the row is bad rather than silently scored on one of them."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"has the key {twice!r} more than once in one object (which value counts is ambiguous)")
    return record


def _parse(raw: bytes) -> tuple[dict | None, str | None]:
    try:
        record = json.loads(raw.decode("utf-8"), parse_constant=_not_json, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 ({exc.reason} at byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"is not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:  # NaN or Infinity, a key twice
        return None, str(exc)
    if not isinstance(record, dict):
        return None, f"is a JSON {type(record).__name__}, not an object"
    return record, None


def splice(raw: bytes, record: dict, added: dict) -> bytes:
    """``raw`` (one JSON object's line) with the keys of ``added`` inserted before its closing brace."""
    body = raw.rstrip(b" \t\r\n")
    try:
        text = json.dumps(added, ensure_ascii=False, allow_nan=False)[1:-1]
    except ValueError:
        raise CorpusError(f"a prediction is NaN or infinite, which JSON cannot hold: {added}",
                          "check the bundle: pocketbert-bench gates BUNDLE") from None
    return body[:-1] + (b", " if record else b"") + text.encode("utf-8", "backslashreplace") + b"}\n"


class JsonlWriter:
    def __init__(self, kinds: dict[str, str]):
        self.kinds = kinds
        self.source = None  # (record, raw) rows of the input, in order: the Ray driver splices into them

    def begin(self, columns=None) -> bytes:
        return b""

    def encode(self, rows: list[tuple], predictions: dict[str, list]) -> bytes:
        names = list(predictions)
        for name in names:
            if any(name in record for record, _ in rows):
                raise CorpusError(f"input rows already have a key {name!r}: the prediction would overwrite it",
                                  "pass --prefix with another prefix for the prediction columns")
        return b"".join(splice(raw, record, {name: predictions[name][i] for name in names})
                        for i, (record, raw) in enumerate(rows))

    def follow(self, reader) -> None:
        """Take the input's bytes from ``reader`` (Ray hands over values, not the bytes they were written as)."""
        self.source = (row for chunk in reader.chunks(1024) for row in chunk.rows)
        self.text_field = reader.text_field

    def encode_table(self, table, keep: list[int]) -> bytes:
        """Rows of ``table`` (from Ray, with their predictions) at indices ``keep``, spliced into the input's
        lines: the next ``table.num_rows`` rows of the input, checked against the table's texts."""
        rows = [next(self.source, (None, None)) for _ in range(table.num_rows)]
        texts = table.column(self.text_field).to_pylist() if self.text_field in table.column_names else None
        for i, (record, _) in enumerate(rows):
            if record is None or (texts is not None and record.get(self.text_field) != texts[i]):
                raise CorpusError("the rows Ray read do not line up with the input's lines",
                                  "run without --ray (the streaming job reads the file itself)")
        kept = [rows[i] for i in keep]
        columns = {name: table.column(name).to_pylist() for name in self.kinds}
        return self.encode(kept, {name: [values[i] for i in keep] for name, values in columns.items()})
