"""PocketBERT converter: Hugging Face checkpoint -> transformed, exported, verified bundle.

The conversion is a staged pipeline (see :mod:`converter.pipeline`):
load -> transform -> export -> quantize -> verify -> bundle.
"""

__version__ = "0.1.0"
