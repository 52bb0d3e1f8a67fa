"""PocketBERT converter: Hugging Face checkpoint -> transformed, exported, verified bundle.

The conversion is a staged pipeline (see :mod:`converter.pipeline`):
load -> transform -> export -> quantize -> verify -> bundle.
"""

__version__ = "0.1.0"

from .quiet import mute_import_chatter  # noqa: E402  (stdlib only: before any module imports transformers)

mute_import_chatter()
