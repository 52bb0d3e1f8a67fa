"""The ``pocketbert-bench`` command group; each command module registers itself with it."""

from __future__ import annotations

import click


@click.group(help="The PocketBERT benchmark harness: bundles, latency, device, accuracy, report.")
def cli() -> None:
    pass
