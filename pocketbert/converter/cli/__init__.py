"""Command line: ``pocketbert-convert CHECKPOINT --opt nonorm,relu,int8`` and the checkpoint commands.

group.py holds the command group; convert.py the default command (render.py draws its screen);
checkpoints.py finetune, recover, trim-vocab and share-embeddings; listing.py ``list``; cut.py ``cut``
(a bundle of what one target runs).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

import click

from pocketbert.runtime.terminal import command_name, styled

from .. import errors, quiet
from . import checkpoints, convert, cut, listing  # noqa: F401  (importing registers the commands)
from .common import console
from .group import cli

__all__ = ["cli", "main"]


def main(argv=None) -> int:
    # Library chatter (exporter diagnostics, transformers load reports) would bury our own output.
    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advises via the root logger
    import torch  # noqa: F401  (torch configures its loggers on import: quieten them afterwards)

    for name in ("torch", "torch.utils._pytree", "torch.onnx", "torch._export"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with quiet.silenced(), errors.disk_errors_as_output_errors():
            cli.main(args=argv, prog_name=command_name(), standalone_mode=False)
    except errors.ConverterError as exc:
        console.print(styled("[bold red]error:[/] ", exc.problem))
        if exc.fix:
            console.print(styled("  [bold]fix:[/] ", exc.fix))
        return exc.exit_code
    except click.exceptions.Abort:
        console.print("interrupted: nothing was written")
        return errors.EXIT_INTERRUPTED
    except KeyboardInterrupt:
        console.print("interrupted: nothing was written")
        return errors.EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception:  # a bug: show it, since library output was silenced
        console.print_exception(max_frames=8)
        return errors.EXIT_INTERNAL
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
