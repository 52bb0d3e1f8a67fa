"""JSON Lines: one JSON object per line; results are the object with the prediction keys added.

The reader works on bytes, so the offset of every line is known: a resumed run seeks straight to the
first line after the last completed chunk.  Blank lines are not rows (they carry nothing to classify).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .formats import Chunk, CorpusError
from .predict import MISSING


class Reader:
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
                if line == 1:
                    raw = raw.removeprefix(b"\xef\xbb\xbf")
                if not raw.strip():
                    continue
                record, reason = _parse(raw)
                if reason:
                    problems[len(rows)] = reason
                rows.append(record)
                lines.append(line)
                if len(rows) == size:
                    yield self._chunk(rows, lines, problems, offset, line)
                    rows, lines, problems = [], [], {}
        if rows:
            yield self._chunk(rows, lines, problems, offset, line)

    def _chunk(self, rows, lines, problems, offset, line) -> Chunk:
        texts = [MISSING if r is None else r.get(self.text_field, MISSING) for r in rows]
        pairs = None if not self.pair_field else [MISSING if r is None else r.get(self.pair_field, MISSING)
                                                  for r in rows]
        return Chunk(rows, lines, texts, pairs, {"offset": offset, "line": line}, offset, problems)

    @staticmethod
    def keep(rows: list, indices: list[int]) -> list:
        return [rows[i] for i in indices]


def _parse(raw: bytes) -> tuple[dict | None, str | None]:
    try:
        record = json.loads(raw)
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 ({exc.reason} at byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"is not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(record, dict):
        return None, f"is a JSON {type(record).__name__}, not an object"
    return record, None


class Writer:
    def __init__(self, kinds: dict[str, str]):
        self.kinds = kinds

    def begin(self, columns=None) -> bytes:
        return b""

    def encode(self, rows: list[dict], predictions: dict[str, list]) -> bytes:
        names = list(predictions)
        for name in names:
            if any(name in row for row in rows):
                raise CorpusError(f"input rows already have a key {name!r}: the prediction would overwrite it",
                                  "pass --prefix with another prefix for the prediction columns")
        out = []
        for i, row in enumerate(rows):
            record = dict(row)
            record.update((name, predictions[name][i]) for name in names)
            out.append(json.dumps(record, ensure_ascii=False))
        return ("\n".join(out) + "\n").encode("utf-8", "backslashreplace") if out else b""

    def encode_table(self, table) -> bytes:
        """Rows that already carry their predictions (an Arrow table from Ray)."""
        rows = table.to_pylist()
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8", "backslashreplace")
