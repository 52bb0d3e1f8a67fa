"""The corpus job on Ray Data: Ray reads the file, an actor pool of :class:`BatchPredictor` (the bundle loaded
once per actor) predicts, and the driver writes the results into one file through the same writers and
partial-output rules as the streaming job.

Ray keeps the input order (``preserve_order``), so row N of the output is row N of the input.  Ray's read
tasks may run on any node, and every actor opens the bundle directory: on a cluster both must be at the
same path on every node (a shared file system, or copies).  Needs ``pip install 'pocketbert[cluster]'``;
imported only for ``--ray``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

from ..errors import BackendUnavailableError
from .batch_predictor import BatchPredictor
from .formats import CorpusError, format_of
from .job import Job, Summary, columns_of, open_format
from .lock import OutputLock
from .partial import FULL, READ_ONLY, Partial, write_error
from .predict import Predictor

try:
    import ray
    import ray.data
except ImportError:  # pragma: no cover - depends on the install
    ray = None


def require_ray() -> None:
    if ray is None:
        raise BackendUnavailableError("--ray needs Ray, which is not installed", "pip install 'pocketbert[cluster]'")


def read(fmt: str, path: Path, header: list[str] | None):
    """A Ray dataset of the input.  CSV/TSV columns are all read as strings: ids such as 007 stay 007."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    uri = str(Path(path).resolve())
    # reads hold no CPU: an actor pool as large as the cluster's CPUs would otherwise leave none to read with
    # and the job would wait forever
    common = {"file_extensions": None, "num_cpus": 0}
    if fmt == "jsonl":  # pyarrow's reader (lines=True would be pandas', which turns an id "007" into 7)
        return ray.data.read_json(uri, **common)
    if fmt == "parquet":
        return ray.data.read_parquet(uri, **common)
    parse = pacsv.ParseOptions(delimiter=",", newlines_in_values=True) if fmt == "csv" else \
        pacsv.ParseOptions(delimiter="\t", quote_char=False)
    convert = pacsv.ConvertOptions(column_types={name: pa.string() for name in header}, strings_can_be_null=False)
    return ray.data.read_csv(uri, parse_options=parse, convert_options=convert, **common)


def _estimate_rows(path: Path, fmt: str, reader) -> int | None:
    """For the progress bar: Parquet knows its rows; a text file's lines are counted (bytes scanned, not parsed)."""
    if fmt == "parquet":
        return reader.total()
    with open(path, "rb") as f:
        lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    return max(0, lines - (fmt != "jsonl"))


def run(job: Job, predictor: Predictor, address: str, workers: int | None, *, progress=None, on_start=None,
        on_bad=None) -> Summary:
    require_ray()
    Partial(job.output).prepare_output(job.overwrite)
    with OutputLock(job.output):  # a second run on this output is refused, not mixed in
        return _run(job, predictor, address, workers, progress=progress, on_start=on_start, on_bad=on_bad)


def _run(job: Job, predictor: Predictor, address: str, workers: int | None, progress, on_start, on_bad) -> Summary:
    started = time.perf_counter()
    fmt = format_of(job.input)
    partial = Partial(job.output)
    partial.prepare({"engine": "ray"}, resume=False, overwrite=job.overwrite)
    reader, writer = open_format(fmt, job.input, job.settings, None, kinds=predictor.kinds)
    header = writer.begin(columns_of(reader))
    if fmt == "jsonl":
        writer.follow(reader)  # JSON Lines keeps the input's bytes: the driver reads them itself
    own_instance = not ray.is_initialized()
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its per-dataset notes would bury ours
    if own_instance:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,  # "local": always a new instance
                 logging_level="ERROR")
    try:
        dataset = _predicted(job, predictor, fmt, reader, workers=workers)
        if on_start:
            on_start(_estimate_rows(job.input, fmt, reader), 0, "row")
        partial.start(header, {}, {"engine": "ray", "input": str(Path(job.input).resolve())})
        _write(job, dataset, writer, partial, progress=progress, on_bad=on_bad)
        partial.finish(getattr(writer, "finalize", None))
    except BaseException as exc:
        partial.close()
        partial.discard()  # a Ray run is not resumable: leave nothing behind
        if isinstance(exc, OSError) and exc.errno in FULL + READ_ONLY:  # the disk under --output, not a bug
            raise write_error(job.output, exc, None) from None
        raise
    finally:
        if own_instance:
            ray.shutdown()
    s = partial.state
    return Summary(Path(job.output), s["rows_written"], s["rows_read"], s["skipped_count"], resumed_at=0,
                   seconds=time.perf_counter() - started, kept=partial.kept)


def _predicted(job: Job, predictor: Predictor, fmt: str, reader, workers: int | None):
    """The dataset with prediction columns: an actor pool of ``workers`` BatchPredictors, one CPU each."""
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False  # the command line draws its own
    # Every actor runs the artifact the driver opened: backend="auto" may pick another one on another node (the
    # fastest there), and one corpus must not be labelled by two model files.  One intra-op thread per actor:
    # actors, not threads, share the CPUs.
    load = {**job.settings.load, "recipe": predictor.pipeline.artifact.recipe, "precision": None,
            "threads": job.settings.load.get("threads") or 1}
    settings = dataclasses.replace(job.settings, load=load)
    size = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    bundle = str(Path(job.bundle).resolve())
    return read(fmt, job.input, getattr(reader, "header", None)).map_batches(
        BatchPredictor, fn_constructor_kwargs={"bundle": bundle, "settings": dataclasses.asdict(settings),
                                               "bad_rows": "mark"},
        batch_size=job.chunk_rows, batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=size), num_cpus=1)


def _write(job: Job, dataset, writer, partial: Partial, progress, on_bad) -> None:
    """Driver side: batches in input order; bad rows listed (``row N``: N-th data row) or fatal."""
    error_column, seen = f"{job.settings.prefix}error", 0
    try:
        for batch in dataset.iter_batches(batch_size=job.chunk_rows, batch_format="pyarrow"):
            errors = batch.column(error_column)
            bad = [(seen + i + 1, reason) for i, reason in enumerate(errors.to_pylist()) if reason is not None]
            if bad and not job.skip_bad:
                raise CorpusError(f"{job.input}, row {bad[0][0]}: {bad[0][1]}",
                                  "fix that row, or pass --skip-bad to skip bad rows (each is listed)")
            keep = [i for i, reason in enumerate(errors.to_pylist()) if reason is None]
            partial.write(writer.encode_table(batch.drop_columns([error_column]), keep))
            partial.commit({}, batch.num_rows, len(keep), bad)
            seen += batch.num_rows
            for row, reason in bad:
                on_bad and on_bad(f"row {row}", reason)
            if progress:
                progress(seen, len(keep))
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, CorpusError):
            raise cause from None
        raise CorpusError(f"the Ray job failed: {str(exc).splitlines()[0]}",
                          "check that the bundle directory exists at the same path on every node "
                          "(POCKETBERT_VERBOSE=1 and Ray's logs show more)") from None
