"""Real text for calibration and verification: plain text, GLUE TSV or CoNLL files.

Only the *text* is read here (no labels): a text is a string, or a ``(text_a, text_b)`` pair for
sentence-pair tasks such as MRPC and STS-B.  The format is recognised from the content.
"""

from __future__ import annotations

import os
from pathlib import Path

from pocketbert.locations import checkout
from ..errors import ConverterInputError

Text = str | tuple[str, str]

BUILTIN_CALIBRATION = Path(__file__).parent / "resources" / "calibration_en.txt"
DATA_ENV = "POCKETBERT_DATA"
# Default evaluation text per task, relative to the data directory.
DEFAULT_VERIFY = {"classification": "glue/SST-2/dev.tsv", "ner": "conll2003/dev.txt"}


def data_dir(explicit: str | os.PathLike | None = None) -> Path | None:
    """The data directory: --data-dir, else $POCKETBERT_DATA, else ../shared/data beside a checkout of the
    repository (an installed package has no such default).

    One given explicitly must be a directory (a typo must not quietly verify on the built-in sentences);
    the environment variable and the default may be missing: callers fall back with a notice."""
    if explicit:
        path = Path(explicit)
        if not path.is_dir():
            problem = "is not a directory" if path.exists() else "does not exist"
            raise ConverterInputError(f"--data-dir {str(path)!r} {problem}",
                                      "give the directory holding glue/ and conll2003/, or leave --data-dir out (then "
                                      f"${DATA_ENV}, else ../shared/data beside a checkout of the repository)")
        return path
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    repository = checkout()
    beside_repo = repository.parent / "shared" / "data" if repository else None
    return beside_repo if beside_repo and beside_repo.is_dir() else None


def _is_conll(lines: list[str]) -> bool:
    content = [line for line in lines[:200] if line.strip()]
    if not content:
        return False
    if content[0].startswith("-DOCSTART-"):
        return True
    cols = [line.split() for line in content]
    return all(len(c) >= 2 for c in cols) and sum(
        c[-1] == "O" or c[-1][:2] in ("B-", "I-", "E-", "S-") for c in cols) >= 0.8 * len(cols)


def _read_conll(lines: list[str]) -> list[Text]:
    texts, words = [], []
    for line in lines + [""]:
        if not line.strip() or line.startswith("-DOCSTART-"):
            if words:
                texts.append(" ".join(words))
            words = []
        else:
            words.append(line.split()[0])
    return texts


def _read_tsv(lines: list[str]) -> list[Text]:
    header = [h.strip().lower() for h in lines[0].split("\t")]
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    pairs = [("sentence1", "sentence2"), ("#1 string", "#2 string"), ("question1", "question2"),
             ("question", "sentence"), ("premise", "hypothesis")]
    for a, b in pairs:
        if a in header and b in header:
            ia, ib = header.index(a), header.index(b)
            return [(r[ia].strip(), r[ib].strip()) for r in rows if len(r) > max(ia, ib)]
    if "sentence" in header:
        i = header.index("sentence")
        return [r[i].strip() for r in rows if len(r) > i]
    if len(header) == 4:  # CoLA: source, label, original label, sentence; no header row
        return [r[3].strip() for r in (line.split("\t") for line in lines) if len(r) == 4]
    raise ConverterInputError("unrecognised TSV layout: no 'sentence', 'sentence1/sentence2' or '#1 String' column",
                              "give a GLUE-format TSV, a CoNLL file, or a plain text file with one text per line")


def read_texts(path: str | os.PathLike, *, what: str = "calibration") -> list[Text]:
    """Texts from a plain-text (one per line), GLUE TSV or CoNLL file; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise ConverterInputError(f"{what} file {str(path)!r} does not exist" if not path.exists()
                                  else f"{what} path {str(path)!r} is not a file",
                                  "give a text file (one text per line), a GLUE .tsv or a CoNLL file")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConverterInputError(f"{what} file {str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                  "convert it to UTF-8") from exc
    except OSError as exc:
        raise ConverterInputError(f"cannot read {what} file {str(path)!r}: {exc.strerror}",
                                  "check its permissions") from exc
    if "\x00" in text:
        raise ConverterInputError(f"{what} file {str(path)!r} is binary, not text", "give a UTF-8 text file")
    lines = text.splitlines()
    if _is_conll(lines):
        texts = _read_conll(lines)
    elif lines and "\t" in lines[0]:
        try:
            texts = _read_tsv(lines)
        except ConverterInputError as exc:
            raise ConverterInputError(f"{what} file {str(path)!r}: {exc.problem}", exc.fix) from exc
    else:
        texts = [line.strip() for line in lines if line.strip()]
    texts = [t for t in texts if (t if isinstance(t, str) else t[0])]
    if not texts:
        raise ConverterInputError(f"{what} file {str(path)!r} holds no text", "give a file with at least one sentence")
    return texts


def default_verify_texts(task: str, data: Path | None, own: Path | None = None) -> tuple[list[Text], str]:
    """Real sentences for verification: ``own`` (the dev file of the task the model was trained on, pairs for
    a pair model), else the task kind's usual dev set in the data directory, else built-in text."""
    if own is not None:  # named relative to the data directory when in it: no user's home in a manifest
        inside = data is not None and own.resolve().is_relative_to(data.resolve())
        return read_texts(own, what="verification"), str(own.resolve().relative_to(data.resolve()) if inside else own)
    if data is not None and (data / DEFAULT_VERIFY[task]).is_file():
        path = data / DEFAULT_VERIFY[task]
        return read_texts(path, what="verification"), str(Path(DEFAULT_VERIFY[task]))
    return read_texts(BUILTIN_CALIBRATION, what="verification"), "built-in:calibration_en.txt"


def describe(path: Path | None) -> str:
    return f"built-in:{BUILTIN_CALIBRATION.name}" if path is None else str(path)
