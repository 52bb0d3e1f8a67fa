"""The model every backend exports: named int64 inputs -> ``logits`` (no dicts, no optional outputs)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn


class LogitsModel(nn.Module):
    """The exported signature: named int64 inputs -> ``logits`` (no dicts, no optional outputs)."""

    def __init__(self, model: nn.Module, input_names: Sequence[str]):
        super().__init__()
        self.model = model
        self.input_names = list(input_names)
        self.config = model.config

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        return self.model(**kwargs).logits
