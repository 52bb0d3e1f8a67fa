"""``pocketbert-convert cut BUNDLE --target phone|web|desktop --out DIR``: a bundle of what one target runs."""

from __future__ import annotations

from pathlib import Path

import click

from pocketbert.runtime.terminal import plain

from ..output.cut import TARGETS, cut
from .common import out_console
from .group import cli

CUT_EXIT_CODES = """Exit codes: 0 bundle written; 2 bad command line; 3 unusable source bundle, target or recipe (no
artifact for the target, a recipe absent or unverified, a file that does not match the manifest); 6 output not
writable, not empty, not ours to replace, or the disk is full; 130 interrupted. On any non-zero exit no bundle
is written, and the source bundle is never written."""

TARGET_HELP = ("phone: the one TFLite model the Android app would choose; web: the one the web page would choose "
               "(never int8-static); desktop: every verified ONNX model. Each with the tokenizer and label files its "
               "reader needs.")


@cli.command("cut", short_help="Copy a bundle keeping only what one target runs.", epilog=CUT_EXIT_CODES)
@click.argument("bundle", type=click.Path(path_type=Path))
@click.option("--target", type=click.Choice(list(TARGETS)), required=True, help=TARGET_HELP)
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True, help="New bundle directory to write.")
@click.option("--recipe", metavar="NAME", help="Keep this verified artifact instead (e.g. tflite:fp32); it must "
              "run on --target.")
@click.option("--overwrite", is_flag=True, help="Replace a bundle PocketBERT wrote at --out (never any other "
              "directory, never the source).")
def cut_command(bundle, target, out, recipe, overwrite):
    """Write a new bundle holding BUNDLE's manifest (listing only what is kept), the tokenizer and label files
    and the artifacts that --target runs; every file is checked against BUNDLE's manifest first."""
    result = cut(bundle, target, out, recipe=recipe, overwrite=overwrite)
    kept = ", ".join(f"{a.recipe} ({a.file}, {_mb(result.files[a.file])})" for a in result.kept)
    out_console.print(plain(f"cut {bundle} for {target}: kept {kept}"))
    others = [name for name in result.files if name not in {a.file for a in result.kept}]
    out_console.print(plain(f"  with {', '.join(f'{n} ({_mb(result.files[n])})' for n in others)}"))
    out_console.print(plain(f"  dropped {', '.join(result.dropped) or 'nothing'}"))
    share = result.bytes_after / result.bytes_before if result.bytes_before else 1.0
    out_console.print(plain(f"size: {_mb(result.bytes_before)} -> {_mb(result.bytes_after)} ({share:.1%}), "
                            f"written to {result.path}"))
    # the manifest changed, so the pin did: a reader pinned to the source must be given this one
    out_console.print(f"bundle pin: sha256 {result.pin}")


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB" if size >= 1000 else f"{size} B"
