"""``pocketbert-run BUNDLE [TEXT …]``: classify texts or find entities with a converter bundle.

Texts come from the arguments, else from ``--file`` (``-`` for stdin), else from stdin when it is not a
terminal: one text per line (``--pairs``: ``text_a<TAB>text_b``).  Output: one JSON object per input
line (JSON Lines) or, on a terminal, a table.  Input is processed in chunks, so a large file or an
endless pipe streams.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator

import click
from rich.console import Console
from rich.table import Table

from . import MAX_THREADS, load
from .backends import BACKENDS
from .bundle import Bundle, parse_pin
from .corpus import command as corpus
from .errors import Error, InputError
from .machine import usable_cpus
from .ner import AGGREGATIONS
from .quiet import native_stderr_silenced
from .terminal import plain, styled

CHUNK = 256  # lines per model call: keeps memory flat on long input, batches well


class BackendChoice(click.Choice):
    """``auto`` or a registered runtime backend, read from the registry when the command line is parsed
    (and the help drawn), so that a backend module is all it takes to add one."""

    def __init__(self):
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return ("auto", *BACKENDS.names())

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ assigns it
        pass


def _lines(stream) -> Iterator[str]:
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            raise InputError(f"input line {number} is not UTF-8 ({exc.reason} at byte {exc.start})",
                             "convert the input to UTF-8") from None
        if number == 1:
            line = line.removeprefix("\ufeff")
        yield line.rstrip("\r\n")


def _items(texts: Iterable[str], pairs: bool) -> Iterator:
    for number, text in enumerate(texts, 1):
        if not pairs:
            yield text
            continue
        parts = text.split("\t")
        if len(parts) != 2:
            raise InputError(f"input {number} has {len(parts)} tab-separated fields; --pairs needs 2",
                             "write each pair as text_a<TAB>text_b on one line")
        yield parts[0], parts[1]


def _record(item, result, task: str) -> dict:
    record = {"text": item} if isinstance(item, str) else {"text": item[0], "text_pair": item[1]}
    record["labels" if task == "classification" else "entities"] = result
    return record


def _table(records: list[dict], task: str, start: int) -> Table:
    """Texts, labels and spans go in as plain Text: a cell string would be read as rich markup."""
    table = Table(show_lines=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("text", overflow="fold", ratio=3)
    if task == "classification":
        table.add_column("label")
        table.add_column("score", justify="right")
        for i, r in enumerate(records, start):
            text = r["text"] if "text_pair" not in r else f"{r['text']} ⟂ {r['text_pair']}"
            table.add_row(str(i), plain(text), plain("\n".join(p["label"] for p in r["labels"])),
                          "\n".join(f"{p['score']:.4f}" for p in r["labels"]))
    else:
        table.add_column("entity")
        table.add_column("span", style="bold")
        table.add_column("chars", justify="right", style="dim")
        table.add_column("score", justify="right")
        for i, r in enumerate(records, start):
            entities = r["entities"]
            key = "entity_group" if not entities or "entity_group" in entities[0] else "entity"
            table.add_row(str(i), plain(r["text"]), plain("\n".join(e[key] for e in entities)),
                          plain("\n".join(r["text"][e["start"]:e["end"]] for e in entities)),
                          "\n".join(f"{e['start']}–{e['end']}" for e in entities),
                          "\n".join(f"{e['score']:.4f}" for e in entities))
    return table


def _pin_option(ctx, param, value):
    try:
        return parse_pin(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("bundle", type=click.Path(file_okay=False))
@click.argument("texts", nargs=-1)
@click.option("--file", "file", type=click.File("rb"), help="Read texts from FILE, one per line ('-': stdin).")
@click.option("--pairs", is_flag=True, help="Each text is a sentence pair: text_a<TAB>text_b.")
@click.option("--aggregation", type=click.Choice(AGGREGATIONS), default="simple", show_default=True,
              help="NER: how tokens become entities (as in Hugging Face's pipeline).")
@click.option("--stride", type=click.IntRange(min=0), help="NER: overlap in tokens of windows over long texts.")
@click.option("--top-k", type=click.IntRange(min=1), default=1, show_default=True,
              help="Classification: labels per text, best first.")
@click.option("--backend", type=BackendChoice(), default="auto", show_default=True)
@click.option("--precision", help="Artifact precision, e.g. fp32, int8-dynamic (default: int8 if present).")
@click.option("--recipe", help="Exact artifact recipe, e.g. onnx:fp32.")
@click.option("--threads", type=click.IntRange(1, MAX_THREADS), help=f"Backend intra-op threads (1 to {MAX_THREADS}; "
              "more than the CPUs this process may use only slows it down, with a warning).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Rows per model run.")
@click.option("--output", metavar="auto|jsonl|table|FILE",
              help="auto (default): a table on a terminal, JSON Lines otherwise. With --input: the results file.")
@click.option("--no-verify", is_flag=True, help="Skip the SHA-256 check of the bundle files.")
@click.option("--expect-sha256", metavar="HEX", callback=_pin_option,
              help="Refuse the bundle unless its manifest.json has this SHA-256 (printed by the converter).")
@corpus.options
def main(bundle, texts, file, pairs, aggregation, stride, top_k, backend, precision, recipe, threads, batch_size,
         output, no_verify, expect_sha256, input_path, **corpus_options):
    """Run a PocketBERT bundle on TEXTS (or lines of --file / stdin); print results.

    Exit codes: 0 ok; 2 bad command line; 3 unusable bundle; 4 model file refused or not matching
    its tokenizer/labels; 5 unusable input; 6 backend package not installed.
    """
    err = Console(stderr=True, soft_wrap=True)  # messages stay one line each: greppable
    try:
        _check_arguments(bundle, texts, file, expect_sha256, no_verify=no_verify)
        _refuse_options_for_the_other_task(bundle, click.get_current_context())
        _warn_oversubscribed(threads, err)
        load_options = dict(backend=backend, threads=threads, precision=precision, recipe=recipe,
                            batch_size=batch_size, verify=not no_verify, expected_sha256=expect_sha256)
        if input_path is not None:  # a corpus file: streamed to --output FILE (runtime/corpus)
            if texts or file is not None or pairs:
                raise click.UsageError("--input reads the texts from the corpus file: drop TEXTS/--file/--pairs "
                                       "(sentence pairs: --pair-field)")
            corpus.run(bundle, output, load_options, top_k=top_k, aggregation=aggregation, stride=stride,
                       input_path=input_path, err=err, quiet_load=native_stderr_silenced, **corpus_options)
            return
        if output not in (None, "auto", "jsonl", "table"):
            raise click.BadParameter(f"{output!r} is not one of auto, jsonl, table (a results file needs --input)",
                                     param_hint="--output")
        source = _source(texts, file)
        with native_stderr_silenced():
            pipe = load(bundle, **load_options)
        if err.is_terminal:
            for note in pipe.bundle.notes:
                err.print(styled("[yellow]note:[/] ", note))
        table = output == "table" or output in (None, "auto") and sys.stdout.isatty()
        _print_results(pipe, _items(source, pairs), table, top_k=top_k, aggregation=aggregation, stride=stride)
    except Error as exc:
        err.print(styled("[red]error:[/] ", exc.problem))
        if exc.fix:
            err.print(styled("  fix: ", exc.fix))
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `… | head`: the reader left; not an error
        sys.stderr.close()
        sys.exit(0)


def _check_arguments(bundle: str, texts, file, expect_sha256, no_verify: bool) -> None:
    if not bundle.strip():
        raise click.UsageError("BUNDLE is empty: give the bundle directory written by the converter")
    if texts and file is not None:
        raise click.UsageError("give texts as arguments or with --file, not both")
    if expect_sha256 and no_verify:
        raise click.UsageError("--expect-sha256 pins the bundle through the SHA-256 checks: drop --no-verify")


#: options that only one task reads: given for the other, they would change nothing, silently
TASK_OPTIONS = {"aggregation": ("--aggregation", "ner"), "stride": ("--stride", "ner"),
                "top_k": ("--top-k", "classification")}


def _refuse_options_for_the_other_task(bundle: str, ctx: click.Context) -> None:
    given = [name for name in TASK_OPTIONS
             if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)]
    if not given:
        return
    task = Bundle.open(bundle).task  # a few milliseconds, and only when such an option was given
    for name in given:
        flag, reads = TASK_OPTIONS[name]
        if task != reads:
            other = "--top-k" if reads == "ner" else "--aggregation and --stride"
            raise click.UsageError(f"{flag} applies to {reads} bundles only, and {bundle} is a {task} bundle: it "
                                   f"would change nothing (a {task} bundle takes {other}); drop {flag}")


def _warn_oversubscribed(threads: int | None, err: Console) -> None:
    """More threads than usable CPUs is allowed (a shared machine may free some) but never faster: say so."""
    usable = usable_cpus()
    if threads is not None and threads > usable:
        err.print(styled("[yellow]warning:[/] ", f"--threads {threads} is more than the {usable} CPU(s) this process "
                         "may use: the threads will share them and run slower, not faster"))


def _arguments(texts: tuple[str, ...]) -> tuple[str, ...]:
    """Python keeps a command-line argument's invalid UTF-8 bytes as lone surrogates: name the argument and
    the byte, as for input lines, instead of blaming the text's Unicode later."""
    for number, text in enumerate(texts, 1):
        try:
            os.fsencode(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"text argument {number} is not UTF-8 ({exc.reason} at byte {exc.start})",
                             "pass UTF-8 text (set the terminal to UTF-8, or convert the text with iconv)") from None
    return texts


def _source(texts, file) -> Iterable[str]:
    if texts:
        return _arguments(texts)
    if file is not None:
        return _lines(file)
    if not sys.stdin.isatty():
        return _lines(sys.stdin.buffer)
    raise click.UsageError("no input: give texts as arguments, --file FILE, or pipe text into stdin")


def _print_results(pipe, items, table: bool, *, top_k, aggregation, stride) -> None:
    """Results chunk by chunk as they come: a table on a terminal, JSON Lines otherwise."""
    out = Console(soft_wrap=not table, highlight=False)
    count = 0
    while chunk := list(itertools.islice(items, CHUNK)):
        if pipe.task == "classification":
            results = pipe(chunk, top_k=top_k)
        else:
            results = pipe(chunk, aggregation=aggregation, stride=stride)
        records = [_record(item, result, pipe.task) for item, result in zip(chunk, results)]
        if table:
            out.print(_table(records, pipe.task, count + 1))
        else:
            sys.stdout.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            sys.stdout.flush()
        count += len(chunk)
