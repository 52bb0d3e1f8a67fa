"""Static sequence lengths: a TFLite file holds one signature per length (its bucket), named ``seq_<length>``,
and a row of tokens runs in the smallest bucket that holds it.  Part of the bundle contract (the converter
names the signatures, every reader finds them), kept apart from runtime/contract.py because the backends
use it and the contract reads the backends' registry."""

from __future__ import annotations

#: a TFLite file holds one signature per static sequence length: ``seq_<length>``
SIGNATURE_PREFIX = "seq_"


def signature_name(bucket: int) -> str:
    return f"{SIGNATURE_PREFIX}{bucket}"


def bucket_of(signature: str) -> int | None:
    """The sequence length of a ``seq_<length>`` signature; None for any other name."""
    digits = signature[len(SIGNATURE_PREFIX):]
    return int(digits) if signature.startswith(SIGNATURE_PREFIX) and digits.isdigit() else None


def smallest_bucket(buckets: list[int], length: int) -> int | None:
    """The bucket a row of ``length`` tokens runs in: the smallest that holds it (None: none does)."""
    return next((b for b in sorted(buckets) if b >= length), None)
