"""``python -m pocketbert.benchmarks`` (and ``python -m benchmarks`` from a checkout): the commands live in cli/."""

from .cli import cli

if __name__ == "__main__":
    cli(prog_name="python -m benchmarks")
