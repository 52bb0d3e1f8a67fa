"""What the report's tables and plots share: the headline configuration, cell formatting, row names and order,
and the accuracy delta that goes with a latency row."""

from __future__ import annotations

HEADLINE = {"seq_len": 128, "batch": 1}
# A variant that loses more than this (points against the model's original) is no candidate for "best": the
# accuracy gates of recovered models allow 1.0 for the float model plus 0.5 for int8 (benchmarks.gates).
HEADLINE_MAX_DROP = 1.5


def fmt(value, digits=2, unit=""):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def row_name(r: dict) -> str:
    """runner, + opts, + [tag] for another checkpoint of the model (variant ``recovered/plain-int8``)."""
    tag = (r.get("variant_name") or "").partition("/")
    return r["runner"] + (f" +{r['opts']}" if r.get("opts") else "") + (f" [{tag[0]}]" if tag[1] else "")


def row_order(r: dict):
    return (r["model"], r["threads"], r["seq_len"], r["batch"], r["variant"] == "peer", r["backend"], row_name(r))


def headline_threads(records: list[dict]) -> int | None:
    threads = sorted({r["threads"] for r in records})
    return 2 if 2 in threads else (threads[-1] if threads else None)


def accuracy_delta(accuracy: list[dict], r: dict) -> float | None:
    """The latency row ``r``'s accuracy delta: its GLUE average when measured, else the mean over its tasks."""
    match = [a for a in accuracy if a.get("model") == r["model"] and a.get("runner") == r["runner"]
             and (a.get("opts") or "") == (r.get("opts") or "") and a.get("delta") is not None
             and a.get("variant_name") == r.get("variant_name")]
    glue = [a for a in match if a.get("task") == "glue-average"]
    chosen = glue or match
    return sum(a["delta"] for a in chosen) / len(chosen) if chosen else None
