"""Which format a corpus file is (by its name), and the chunk every format's reader yields."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EXIT_INPUT, Error, InputError

SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".jsonlines": "jsonl", ".csv": "csv", ".tsv": "tsv",
            ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet"}


class CorpusError(Error):
    """A corpus run cannot go on: unreadable input, a bad row without --skip-bad, a partial run that does not
    match.  Exit code 5 (unusable input), as the runtime's other input errors."""

    exit_code = EXIT_INPUT


class OutputExistsError(Error):
    """The output (or a partial run of it) is there and the command line did not say what to do with it."""

    exit_code = 2


def format_of(path: str | os.PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    raise InputError(f"{str(path)!r}: unknown corpus format {suffix or '(no extension)'!r}",
                     "name the file .jsonl (one JSON object per line), .csv, .tsv or .parquet")


def check_output_format(input_format: str, output: str | os.PathLike) -> None:
    """Results go in the input's format; an output named for another format would be mislabelled."""
    suffix = Path(output).suffix.lower()
    if suffix in SUFFIXES and SUFFIXES[suffix] != input_format:
        raise InputError(f"--output {str(output)!r} names a {SUFFIXES[suffix]} file, but results are written in "
                         f"the input's format ({input_format})", f"name the output .{input_format}")


@dataclass
class Chunk:
    """Up to ``--chunk-rows`` rows of the input, as read.

    ``rows`` are the format's own rows (dicts, field lists, an Arrow record batch), ``lines`` their line
    (JSONL, CSV: the line the record starts on) or row number (Parquet), ``texts``/``pairs`` the values of
    the text and pair fields (``predict.MISSING`` when absent), ``problems`` rows the reader could not parse.
    ``position`` is where the next chunk starts (saved with each completed chunk for ``--resume``) and
    ``done`` the input consumed so far, in the reader's progress unit (bytes or rows)."""

    rows: object
    lines: list[int]
    texts: list
    pairs: list | None
    position: dict
    done: int
    problems: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.lines)
