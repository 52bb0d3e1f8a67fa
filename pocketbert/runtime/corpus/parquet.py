"""Parquet (pyarrow): read row group by row group in record batches; results are the input's columns
plus typed prediction columns (entities and top labels as lists of structs).

A Parquet file is only readable once its footer is written, so a run cannot append to one.  The partial
output is therefore an Arrow IPC stream (a schema message, then one record-batch message per completed
chunk: truncating it after the last completed chunk leaves a valid stream); the finished stream is
rewritten as Parquet and renamed into place.  Needs ``pip install 'pocketbert[corpus]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..errors import BackendUnavailableError
from .formats import Chunk, CorpusError

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # pragma: no cover - depends on the install
    pa = pq = None

ROW_GROUP_ROWS = 65536  # rows per row group of the written file (chunks are smaller: fewer, larger groups read faster)


def require() -> None:
    if pa is None:
        raise BackendUnavailableError("Parquet needs pyarrow, which is not installed",
                                      "pip install 'pocketbert[corpus]'")


def arrow_type(kind: str):
    """The Arrow type of a prediction column kind (predict.column_kinds); struct fields in Hugging Face's order."""
    entity = [("score", pa.float64()), ("word", pa.string()), ("start", pa.int64()), ("end", pa.int64())]
    return {"string": pa.string(), "float": pa.float64(),
            "ranked": pa.list_(pa.struct([("label", pa.string()), ("score", pa.float64())])),
            "entities": pa.list_(pa.struct([("entity_group", pa.string()), *entity])),
            "tokens": pa.list_(pa.struct([("entity", pa.string()), ("score", pa.float64()), ("index", pa.int64()),
                                          *entity[1:]]))}[kind]


class ParquetReader:
    unit = "row"

    def __init__(self, path: Path, text_field: str, pair_field: str | None, position: dict | None = None):
        require()
        self.path = Path(path)
        try:
            self.file = pq.ParquetFile(self.path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorpusError(f"{self.path} is not a readable Parquet file: {exc}",
                              "check the file, or give a .jsonl/.csv/.tsv input") from None
        self.schema = self.file.schema_arrow
        self.fields = [self._column(text_field)] + ([self._column(pair_field)] if pair_field else [])
        self.position = position or {"row": 0}

    def _column(self, name: str) -> int:
        if name not in self.schema.names:
            raise CorpusError(f"{self.path} has no column {name!r} (its columns: {', '.join(self.schema.names)})",
                              "name the column holding the text with --text-field (and --pair-field)")
        kind = self.schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise CorpusError(f"{self.path}: column {name!r} holds {kind}, not text",
                              "point --text-field/--pair-field at a string column")
        return self.schema.get_field_index(name)

    def total(self) -> int:
        return self.file.metadata.num_rows

    def chunks(self, size: int) -> Iterator[Chunk]:
        row, start, group = self.position["row"], 0, 0
        groups = self.file.metadata.num_row_groups
        while group < groups and start + self.file.metadata.row_group(group).num_rows <= row:
            start += self.file.metadata.row_group(group).num_rows
            group += 1
        skip = row - start  # rows of the first group already done
        for batch in self.file.iter_batches(batch_size=size, row_groups=range(group, groups), use_threads=False):
            if skip:
                cut = min(skip, batch.num_rows)
                batch, skip = batch.slice(cut), skip - cut
                if not batch.num_rows:
                    continue
            values = [batch.column(i).to_pylist() for i in self.fields]
            lines = list(range(row + 1, row + 1 + batch.num_rows))
            row += batch.num_rows
            yield Chunk(batch, lines, values[0], values[1] if len(values) > 1 else None, position={"row": row},
                        done=row)

    @staticmethod
    def keep(batch, indices: list[int]):
        return batch.take(pa.array(indices, type=pa.int64()))


class ParquetWriter:
    """Writes the partial output as an Arrow IPC stream; :meth:`finalize` turns it into Parquet."""

    def __init__(self, kinds: dict[str, str]):
        require()
        self.kinds = kinds
        self.schema = None

    def begin(self, schema) -> bytes:
        clash = [name for name in self.kinds if name in schema.names]
        if clash:
            raise CorpusError(f"the input already has a column {clash[0]!r}: the prediction would overwrite it",
                              "pass --prefix with another prefix for the prediction columns")
        metadata = {k: v for k, v in (schema.metadata or {}).items() if k != b"pandas"}  # described other columns
        self.schema = pa.schema(list(schema) + [pa.field(n, arrow_type(k)) for n, k in self.kinds.items()],
                                metadata=metadata or None)
        return self.schema.serialize().to_pybytes()

    def resume(self, schema) -> None:
        """The header is already in the partial stream: only learn the output schema."""
        self.begin(schema)

    def encode(self, batch, predictions: dict[str, list]) -> bytes:
        arrays = list(batch.columns) + [pa.array(predictions[n], type=arrow_type(k)) for n, k in self.kinds.items()]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema).serialize().to_pybytes()

    def encode_table(self, table, keep: list[int]) -> bytes:
        table = table.take(pa.array(keep, type=pa.int64())).select(self.schema.names).cast(self.schema)
        return b"".join(b.serialize().to_pybytes() for b in table.to_batches())

    def finalize(self, stream: Path, target: Path) -> None:
        """The finished IPC stream -> a Parquet file at ``target`` (streamed, a row group at a time)."""
        with pa.OSFile(str(stream), "rb") as source, pq.ParquetWriter(str(target), self.schema) as out:
            pending, rows = [], 0
            for batch in pa.ipc.open_stream(source):
                pending.append(batch)
                rows += batch.num_rows
                if rows >= ROW_GROUP_ROWS:
                    out.write_table(pa.Table.from_batches(pending, schema=self.schema))
                    pending, rows = [], 0
            if pending:
                out.write_table(pa.Table.from_batches(pending, schema=self.schema))
