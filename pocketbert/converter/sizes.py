"""``--max-size``: a size as a person writes it -> bytes.

Decimal units as the converter prints sizes (kB, MB, GB, TB: powers of 1000) and binary ones (KiB, MiB, GiB,
TiB: powers of 1024), in any case, with or without a space, the B optional; a bare number is bytes."""

from __future__ import annotations

import re

from .errors import ConverterInputError

_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
UNITS = {"": 1, "b": 1, **_DECIMAL, **{p + "b": f for p, f in _DECIMAL.items()}, **_BINARY,
         **{p + "b": f for p, f in _BINARY.items()}}
ACCEPTED = "B, kB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024), or a bare number of bytes"


def parse_size(text: str, option: str = "--max-size") -> int:
    """'8MB', '8.5 MB', '750kB', '8MiB', '2 GiB', '1234' -> bytes."""
    match = re.fullmatch(r"\s*([-+]?[0-9]+(?:\.[0-9]*)?|[-+]?\.[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    unit = UNITS.get(match.group(2).lower()) if match else None
    if unit is None:
        raise ConverterInputError(f"{option} {text!r} is not a size: write a number and a unit, one of {ACCEPTED}",
                                  f"write it as e.g. {option} 8MB or {option} 8MiB")
    size = float(match.group(1)) * unit
    if size < 1:
        raise ConverterInputError(f"{option} {text!r} is not a size a file fits in: it must be at least 1 byte",
                                  f"give the most the file may weigh, e.g. {option} 8MB")
    return int(size)
