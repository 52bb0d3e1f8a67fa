"""What the one command refuses before any training, with the problem and the fix: each of these would otherwise
surface only after the budget was spent, or never."""

from __future__ import annotations

from ..errors import ConverterInputError


def check_splits(train, dev) -> None:
    """The dev file must be the training text's task: the gate compares scores on it, and a dev file of another
    shape is scored by the model all the same (an MRPC-shaped file by a single-sentence model)."""
    if (train.kind == "ner") != (dev.kind == "ner") or train.pairs != dev.pairs:
        def shape(data) -> str:
            return ("tagged words (CoNLL)" if data.kind == "ner" else "sentence pairs" if data.pairs
                    else "single sentences")
        raise ConverterInputError(f"the dev file {str(dev.path)!r} holds {shape(dev)}, and the training text "
                                  f"{str(train.path)!r} {shape(train)}: the model is trained on one and would be "
                                  "gated on the other",
                                  f"give --dev a dev file of the training text's task ({shape(train)})")
    if train.kind == "classification" and train.labels is not None and len(set(train.labels)) < 2:
        (only,) = set(train.labels) or {None}
        name = train.label_names[only] if only is not None and only < len(train.label_names) else only
        raise ConverterInputError(f"the training text {str(train.path)!r} holds one class only (every row is "
                                  f"{name!r}): distilled on it, the model would learn to answer that class",
                                  "give the task's whole training file, with rows of every class")
