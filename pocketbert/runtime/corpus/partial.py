"""The partial output of a run and its progress record: nothing appears under the output name until the
last row is written, and a killed run continues from its last completed chunk.

Beside ``OUT`` a run writes ``OUT.partial`` (the results so far) and ``OUT.partial.progress.json``
(where the input stops being done, how many bytes of ``OUT.partial`` are complete, and what the run
was: input size and time, bundle, artifact, fields).  After each chunk the partial file is flushed to
disk first and the record replaced atomically second, so the record never claims bytes the disk lacks;
a resume cuts the partial file back to the recorded length (dropping a chunk that was being written) and
reads on from the recorded position: no row lost, none twice.  The finished file is renamed to ``OUT``.
Files are deleted only when they are this program's: a ``.partial`` without a record is left alone.

A finished output is marked with an extended attribute holding its size and SHA-256.  ``--overwrite``
replaces an output that still matches its mark; any other file there (the user's, or one changed since)
is kept under ``OUT.replaced-N`` instead, and the run says so.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
from pathlib import Path

from ..contract import sha256
from .formats import CorpusError, OutputExistsError

RECORD_SCHEMA = "pocketbert-corpus-partial/1"
#: errors of the disk under --output rather than of this program: a problem and a fix, not a traceback
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
KEEP_SKIPPED = 1000  # bad rows listed in the record (all are counted)
OWNER_ATTRIBUTE = "user.pocketbert.corpus-output"  # invisible in a listing, lost when the file is rewritten


class Partial:
    def __init__(self, output: Path):
        self.output = Path(output)
        self.path = self.output.with_name(self.output.name + ".partial")
        self.record = self.output.with_name(self.output.name + ".partial.progress.json")
        self.final = self.output.with_name(self.output.name + ".partial.final")  # Parquet is rewritten here
        self.file = None
        self.state: dict = {}
        self.kept: Path | None = None  # where a replaced output that was not ours went

    def _saved(self) -> dict | None:
        try:
            saved = json.loads(self.record.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise CorpusError(f"{self.record} cannot be read ({exc})", "delete it and the .partial beside it, or "
                              "pass --overwrite to start again") from None
        if not isinstance(saved, dict) or saved.get("schema") != RECORD_SCHEMA:
            raise CorpusError(f"{self.record} is not a progress record of this program", "move it away")
        return saved

    def prepare_output(self, overwrite: bool) -> None:
        """An existing output is replaced only when asked (checked before anything slow starts)."""
        if self.output.is_dir():
            raise OutputExistsError(f"--output {self.output} is a directory", "give a file name")
        if self.output.exists() and not overwrite:
            raise OutputExistsError(f"{self.output} already exists", "pass --overwrite to replace it, or choose "
                                    "another --output")
        if not self.output.parent.is_dir():
            raise OutputExistsError(f"the folder of --output {self.output} does not exist", "create it first")

    def prepare(self, fingerprint: dict, *, resume: bool, overwrite: bool) -> dict | None:
        """Check the output name and any partial run there; the saved state to resume from, or None."""
        self.prepare_output(overwrite)
        saved = self._saved()
        if saved is None:
            if self.path.exists():
                raise OutputExistsError(f"{self.path} exists without a progress record: it is not a run this program "
                                        "can resume or may delete", "move or delete it, then run again")
            return None
        if not self.path.exists():  # killed between the final rename and the record's removal
            self.discard()
            return None
        if resume and saved["fingerprint"] == fingerprint:
            if saved["output_bytes"] >= 0:
                return saved
            self.discard()  # killed before its header was on disk: nothing to keep
            return None
        if overwrite:
            self.discard()
            return None
        if not resume:
            raise OutputExistsError(f"a partial run of {self.output} is there ({saved['rows_written']} rows done)",
                                    "add --resume to continue it, or --overwrite to start again")
        changed = sorted(k for k in set(fingerprint) | set(saved["fingerprint"])
                         if fingerprint.get(k) != saved["fingerprint"].get(k))
        raise CorpusError(f"the partial run of {self.output} was made with another {', '.join(changed)}: "
                          "resuming would mix two runs' results", "repeat the first run's command and input with "
                          "--resume, or pass --overwrite to start again")

    def discard(self) -> None:
        for path in (self.path, self.final, self.record):
            path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def writing(self):
        """Writes to the output's folder: a full or read-only disk ends the run with a CorpusError saying what
        is kept (the partial output up to its last recorded chunk) and how to go on."""
        try:
            yield
        except OSError as exc:
            raise write_error(self.output, exc, self.state.get("rows_read", 0) if self.record.exists() else None) \
                from None

    def start(self, header: bytes, position: dict, fingerprint: dict) -> None:
        self.state = {"schema": RECORD_SCHEMA, "fingerprint": fingerprint, "position": position, "rows_read": 0,
                      "rows_written": 0, "skipped_count": 0, "skipped": [], "chunks": 0, "output_bytes": -1}
        self._write_record()  # the record first: a .partial with a record is known to be ours
        self.file = open(self.path, "wb")
        self.file.write(header)
        self.commit(position, 0, 0, [])

    def reopen(self, saved: dict) -> None:
        self.state = saved
        self.file = open(self.path, "r+b")
        self.file.truncate(saved["output_bytes"])  # drop whatever a killed run wrote after its last commit
        self.file.seek(saved["output_bytes"])

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def commit(self, position: dict, rows_read: int, rows_written: int, skipped: list) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        s = dict(self.state)  # the state becomes this commit's once its record is on disk
        s.update(position=position, rows_read=s["rows_read"] + rows_read, rows_written=s["rows_written"] + rows_written,
                 skipped_count=s["skipped_count"] + len(skipped), chunks=s["chunks"] + (rows_read > 0),
                 output_bytes=self.file.tell())
        s["skipped"] = (s["skipped"] + [list(x) for x in skipped])[:KEEP_SKIPPED]
        self._write_record(s)
        self.state = s

    def _write_record(self, state: dict | None = None) -> None:
        state = self.state if state is None else state
        state["updated"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        tmp = self.record.with_name(self.record.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(state, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
        except OSError:  # the record in place still holds the last commit
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        os.replace(tmp, self.record)

    def finish(self, finalize=None) -> None:
        """Close, rewrite if the format needs it (Parquet), rename into place, remove the record."""
        self.file.close()
        s = self.state
        if s["rows_read"] != s["rows_written"] + s["skipped_count"]:  # no row may go missing unreported
            raise CorpusError(f"{s['rows_read']} rows were read but {s['rows_written']} written and "
                              f"{s['skipped_count']} skipped: the output is left in {self.path.name}",
                              "report this as a PocketBERT bug, with the input")
        done = self.path
        if finalize is not None:
            finalize(self.path, self.final)
            done = self.final
        self.kept = _set_aside(self.output)
        os.replace(done, self.output)
        if done != self.path:
            self.path.unlink()
        _mark(self.output)
        self.record.unlink()

    def close(self) -> None:
        """Leave the partial run as it is (interrupted or failed): resumable from its last commit."""
        if self.file is not None and not self.file.closed:
            with contextlib.suppress(OSError):  # what a full disk did not take lies after the last commit
                self.file.close()


def write_error(output: Path, exc: OSError, rows_kept: int | None) -> CorpusError:
    """A CorpusError for an OSError met writing beside ``output``; ``rows_kept``: rows the partial run holds
    (None: nothing of the run is on disk)."""
    folder = Path(output).parent
    name = Path(exc.filename).name if exc.filename else Path(output).name
    kept = (f"the {rows_kept} rows done are kept in {Path(output).name}.partial: run the same command with --resume "
            "to go on from there" if rows_kept else "then run the same command again")
    if exc.errno in FULL:
        return CorpusError(f"the disk holding {folder} is full ({exc.strerror}) while writing {name}",
                           f"free some space on it, then continue: {kept}")
    if exc.errno in READ_ONLY:
        return CorpusError(f"cannot write {name} in {folder}: {exc.strerror}",
                           f"choose an --output in a folder you may write to, or make {folder} writable; {kept}")
    return CorpusError(f"writing {name} in {folder} failed: {exc.strerror or exc}",
                       f"check the disk holding {folder}; {kept}")


def _mark(path: Path) -> None:
    """Record on the file that this program wrote it, as it is now (where the file system has xattrs)."""
    try:
        mark = {"bytes": path.stat().st_size, "sha256": sha256(path)}
        os.setxattr(path, OWNER_ATTRIBUTE, json.dumps(mark).encode())
    except (OSError, AttributeError):  # no xattrs here: a later --overwrite keeps the file aside instead
        pass


def is_ours(path: Path) -> bool:
    """True when ``path`` is an output this program finished and nobody has changed since."""
    try:
        mark = json.loads(os.getxattr(path, OWNER_ATTRIBUTE))
        return mark["bytes"] == path.stat().st_size and mark["sha256"] == sha256(path)
    except (OSError, AttributeError, ValueError, TypeError, KeyError):
        return False


def _set_aside(output: Path) -> Path | None:
    """Keep an existing ``output`` that is not provably ours under a new name; that name, or None."""
    if not output.exists() or is_ours(output):
        return None
    for n in range(1, 10_000):
        aside = output.with_name(f"{output.name}.replaced-{n}")
        try:
            os.link(output, aside)  # OUT stays in place until the new one replaces it
            return aside
        except FileExistsError:
            continue
        except OSError:  # no hard links on this file system
            if not os.path.lexists(aside):
                os.rename(output, aside)
                return aside
    raise CorpusError(f"cannot keep the existing {output} aside: {output.name}.replaced-1 to -9999 all exist",
                      "move those files away")
