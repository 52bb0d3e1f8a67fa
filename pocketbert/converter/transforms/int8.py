"""``int8``: quantise the exported models (``--int8`` says dynamic, static, both, or the fastest).

Not a rewrite of the PyTorch model, so it has no ``apply``: the quantize stage (stages/quantize.py)
builds the int8 recipes of every backend.  It is declared here so that every ``--opt`` name is one
module of this package.
"""

from __future__ import annotations

from . import Opt, register

register(Opt("int8", "int8 quantisation (see --int8 for dynamic/static)", order=90, quantization=True))
