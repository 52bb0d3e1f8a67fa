"""``python -m pocketbert.benchmarks`` (and ``python -m benchmarks`` from a checkout): the commands live in cli/."""

from pocketbert.runtime.terminal import command_name

from .cli import cli

if __name__ == "__main__":
    cli(prog_name=command_name())
