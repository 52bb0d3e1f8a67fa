"""Texts of a chunk of rows -> prediction columns: one definition for the streaming job, Ray and Spark.

A row is bad when its text (or pair) field is missing, null, not a string, or not valid Unicode; the
check is the pipeline's own input validation applied row by row, so a bad row is named before the
model runs instead of failing the whole chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..tokenization import validate

MISSING = object()  # a row without the field at all (JSONL key absent, CSV row too short)


@dataclass(frozen=True)
class Settings:
    """What decides the prediction columns (recorded with a partial run: a resume must not change it)."""

    text_field: str = "text"
    pair_field: str | None = None
    prefix: str = "pred_"
    top_k: int = 1
    aggregation: str = "simple"
    stride: int | None = None
    load: dict = field(default_factory=dict)  # runtime.load keyword arguments (backend, precision, threads, …)

    def fingerprint(self) -> dict:
        return {"text_field": self.text_field, "pair_field": self.pair_field, "prefix": self.prefix,
                "top_k": self.top_k, "aggregation": self.aggregation, "stride": self.stride}


def problem(value, name: str) -> str | None:
    """Why ``value`` of field ``name`` cannot be classified, or None when it is a usable text."""
    if value is MISSING:
        return f"field {name!r} is missing"
    if value is None:
        return f"field {name!r} is null"
    if not isinstance(value, str):
        return f"field {name!r} is {type(value).__name__} ({str(value)[:40]!r}), not text"
    try:
        validate(value, pairs=False)
    except InputError as exc:
        return exc.problem.replace("the input", f"field {name!r}", 1)
    return None


def row_problems(texts: list, pairs: list | None, settings: Settings) -> dict[int, str]:
    """Row index -> what is wrong, for every bad row of a chunk."""
    out = {}
    for i, text in enumerate(texts):
        reason = problem(text, settings.text_field)
        if reason is None and pairs is not None:
            reason = problem(pairs[i], settings.pair_field)
        if reason is not None:
            out[i] = reason
    return out


def column_kinds(task: str, settings: Settings) -> dict[str, str]:
    """Prediction column name -> kind (``string``, ``float``, ``ranked``, ``entities``, ``tokens``): the
    writers map kinds to their own types (Arrow for Parquet, JSON text inside CSV)."""
    p = settings.prefix
    if task == "classification":
        kinds = {f"{p}label": "string", f"{p}score": "float"}
        if settings.top_k > 1:
            kinds[f"{p}top"] = "ranked"
        return kinds
    return {f"{p}entities": "tokens" if settings.aggregation == "none" else "entities"}


class Predictor:
    """A loaded pipeline and the settings: ``predict(texts, pairs)`` -> ``{column: values}``."""

    def __init__(self, pipeline, settings: Settings):
        if settings.pair_field and pipeline.task != "classification":
            raise InputError(f"--pair-field {settings.pair_field!r}: sentence pairs are for classification, and "
                             f"this bundle's task is {pipeline.task}", "leave --pair-field out")
        self.pipeline = pipeline
        self.settings = settings
        self.kinds = column_kinds(pipeline.task, settings)

    @classmethod
    def load(cls, bundle, settings: Settings) -> Predictor:
        from .. import load

        return cls(load(bundle, **settings.load), settings)

    def predict(self, texts: list[str], pairs: list[str] | None = None) -> dict[str, list]:
        s, names = self.settings, list(self.kinds)
        if not texts:
            return {name: [] for name in names}
        if self.pipeline.task != "classification":
            return {names[0]: self.pipeline(list(texts), aggregation=s.aggregation, stride=s.stride)}
        items = list(texts) if pairs is None else list(zip(texts, pairs))
        results = self.pipeline(items, top_k=max(1, s.top_k))
        columns = {names[0]: [r[0]["label"] for r in results], names[1]: [r[0]["score"] for r in results]}
        if s.top_k > 1:
            columns[names[2]] = results
        return columns
