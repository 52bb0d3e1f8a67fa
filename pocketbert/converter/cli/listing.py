"""``pocketbert-convert list``: what the converter knows."""

from __future__ import annotations

from rich.table import Table

from ..builtin import BUILTIN, DEFAULT_MODEL
from ..opts import help_texts
from ..backends.recipes import recipes
from .common import out_console
from .group import cli


@cli.command("list")
def list_command():
    """Supported families, optimisations, recipes and built-in models."""
    from ..families import families

    table = Table(title="Families")
    table.add_column("family")
    table.add_column("model_type")
    table.add_column("checkpoints")
    for family in families():
        table.add_row(family.name, ", ".join(family.model_types), family.description)
    out_console.print(table)
    out_console.print("Optimisations (--opt): " + "; ".join(f"{k}: {v}" for k, v in help_texts().items()))
    out_console.print("Recipes: " + "; ".join(f"{r.name}: {r.description}" for r in recipes().values()))
    out_console.print("Built-in models: " + "; ".join(f"{k}: {v.description}" for k, v in BUILTIN.items())
                      + f" (default: {DEFAULT_MODEL})")
