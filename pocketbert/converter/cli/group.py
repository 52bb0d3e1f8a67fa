"""The ``pocketbert-convert`` command group; ``convert`` is its default command."""

from __future__ import annotations

import click

from .common import EXIT_CODES


class DefaultGroup(click.Group):
    """A group whose default command is ``convert``: ``pocketbert-convert CKPT`` = ``… convert CKPT``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["convert", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES)
@click.version_option(package_name="pocketbert")
def cli():
    """PocketBERT converter: Hugging Face checkpoint -> verified on-device bundle.

    \b
    pocketbert-convert CHECKPOINT [options]      convert (the default command)
    pocketbert-convert list                      families, optimisations, recipes
    pocketbert-convert cut BUNDLE --target T     keep only what phone, web or desktop runs
    """
