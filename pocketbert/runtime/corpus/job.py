"""The streaming job on one machine: read a chunk, check its rows, predict, append, commit, repeat.

Memory holds one chunk (``chunk_rows`` rows) at a time whatever the corpus size; inside a chunk the
pipeline's own batching (rows of similar length together) does the model runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..contract import MANIFEST, sha256
from .formats import CorpusError, check_output_format, format_of
from .lock import OutputLock, check_free
from .partial import Partial
from .predict import Predictor, Settings, row_problems

DEFAULT_CHUNK_ROWS = 1024


@dataclass
class Job:
    bundle: str | os.PathLike
    input: Path
    output: Path
    settings: Settings = field(default_factory=Settings)
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    skip_bad: bool = False
    resume: bool = False
    overwrite: bool = False


@dataclass
class Summary:
    output: Path
    rows_written: int
    rows_read: int
    skipped_count: int
    resumed_at: int  # rows already done by an earlier run (0: a fresh run)
    seconds: float
    kept: Path | None = None  # where the replaced output now is, when it was not provably this program's


def open_format(fmt: str, path: Path, settings: Settings, position: dict | None, kinds: dict[str, str]):
    """(reader, writer) of a format; pyarrow is imported only for Parquet."""
    text, pair = settings.text_field, settings.pair_field
    if fmt == "jsonl":
        from . import jsonl

        return jsonl.JsonlReader(path, text, pair, position), jsonl.JsonlWriter(kinds)
    if fmt in ("csv", "tsv"):
        from . import delimited

        return (delimited.DelimitedReader(path, text, pair, position, kind=fmt),
                delimited.DelimitedWriter(kinds, kind=fmt))
    from . import parquet

    reader = parquet.ParquetReader(path, text, pair, position)
    return reader, parquet.ParquetWriter(kinds)


def columns_of(reader):
    """What the writer's header is made of: a CSV header, a Parquet schema, nothing for JSONL."""
    return getattr(reader, "header", None) or getattr(reader, "schema", None)


def check_paths(job: Job) -> str:
    """Cheap checks before the bundle loads: the input's format, the output's name.  Returns the format."""
    if not Path(job.input).is_file():
        raise CorpusError(f"--input {str(job.input)!r} is not a file", "give the path of a .jsonl, .csv, .tsv or "
                          ".parquet file")
    fmt = format_of(job.input)
    check_output_format(fmt, job.output)
    if Path(job.output).resolve() == Path(job.input).resolve():
        raise CorpusError("--output is the input file", "write the results to another file")
    Partial(job.output).prepare_output(job.overwrite)
    check_free(job.output)
    return fmt


def fingerprint(job: Job, fmt: str, predictor: Predictor) -> dict:
    """What a resumed run must share with the run it continues."""
    stat = Path(job.input).stat()
    pipe = predictor.pipeline
    return {"input": str(Path(job.input).resolve()), "input_bytes": stat.st_size, "input_mtime_ns": stat.st_mtime_ns,
            "format": fmt, "bundle": sha256(pipe.bundle.path / MANIFEST), "artifact": pipe.artifact.recipe,
            **predictor.settings.fingerprint()}


def run(job: Job, *, predictor: Predictor | None = None, progress: Callable[[int, int], None] | None = None,
        on_bad: Callable[[str, str], None] | None = None, on_start: Callable[[int, int, str], None] | None = None
        ) -> Summary:
    """Run ``job``.  progress(done, rows) after each chunk (done in the reader's unit); on_bad("line 7", reason)
    for each skipped row; on_start(total, done, unit) once, before the first chunk."""
    started = time.perf_counter()
    fmt = check_paths(job)
    predictor = predictor or Predictor.load(job.bundle, job.settings)
    with OutputLock(job.output):  # a second run on this output is refused, not mixed in
        return _run(job, fmt, predictor, started, progress=progress, on_bad=on_bad, on_start=on_start)


def _run(job: Job, fmt: str, predictor: Predictor, started: float, progress, on_bad, on_start) -> Summary:
    partial, prints = Partial(job.output), fingerprint(job, fmt, predictor)
    saved = partial.prepare(prints, resume=job.resume, overwrite=job.overwrite)
    reader, writer = open_format(fmt, job.input, job.settings, saved and saved["position"], kinds=predictor.kinds)
    header = writer.begin(columns_of(reader))
    with partial.writing():
        if saved:
            partial.reopen(saved)
        else:
            partial.start(header, reader.position, prints)
    resumed_at = partial.state["rows_read"]
    if on_start:
        on_start(reader.total(), reader.position.get("offset", reader.position.get("row", 0)), reader.unit)
    try:
        for chunk in reader.chunks(job.chunk_rows):
            with partial.writing():
                skipped = _chunk(job, reader, writer, partial, predictor=predictor, chunk=chunk)
            for line, reason in skipped:
                on_bad and on_bad(f"{reader.unit} {line}", reason)
            if progress:
                progress(chunk.done, len(chunk) - len(skipped))
        with partial.writing():
            partial.finish(getattr(writer, "finalize", None))
    finally:
        partial.close()
    s = partial.state
    return Summary(Path(job.output), s["rows_written"], s["rows_read"], s["skipped_count"], resumed_at=resumed_at,
                   seconds=time.perf_counter() - started, kept=partial.kept)


def _chunk(job: Job, reader, writer, partial: Partial, predictor: Predictor, chunk) -> list[tuple[int, str]]:
    """Predict one chunk and commit it; the bad rows skipped, as (line, reason)."""
    bad = dict(chunk.problems)
    for i, reason in row_problems(chunk.texts, chunk.pairs, job.settings).items():
        bad.setdefault(i, reason)
    if bad and not job.skip_bad:
        i = min(bad)
        raise CorpusError(f"{job.input}, {reader.unit} {chunk.lines[i]}: {bad[i]}",
                          f"fix that row, or pass --skip-bad to skip bad rows (each is listed); the "
                          f"{partial.state['rows_read']} rows before its chunk are saved in {partial.path.name}: "
                          "add --resume to go on from there")
    keep = [i for i in range(len(chunk)) if i not in bad]
    rows = reader.keep(chunk.rows, keep) if bad else chunk.rows
    texts = [chunk.texts[i] for i in keep]
    pairs = None if chunk.pairs is None else [chunk.pairs[i] for i in keep]
    partial.write(writer.encode(rows, predictor.predict(texts, pairs)))
    skipped = [(chunk.lines[i], bad[i]) for i in sorted(bad)]
    partial.commit(chunk.position, len(chunk), len(keep), skipped)
    return skipped
