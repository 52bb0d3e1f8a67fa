"""REPORT.md's "Full-integer int8" section, from ``pocketbert-bench full-integer`` results files.

One table per model: its float export, int8-dynamic, int8-static made by post-training quantization and
int8-static from a quantization-aware (``recover --qat``) checkpoint, each with its dev score, the delta to the
float export of the same bundle and backend, top-1 agreement with it, file size, ops left in float and
latency on the CPU that measured it.  Desktop XNNPACK is not what full-integer models are for: they are made
for phones' NPUs and DSPs, which run int8 only; on a desktop CPU int8-dynamic is the fast one.
"""

from __future__ import annotations

from pathlib import Path

NOTE = ("Latency is desktop CPU (LiteRT with XNNPACK, ONNX Runtime), batch 1, 128 tokens: not the target of "
        "full-integer models, which are made for phones' NPUs and DSPs (int8 only); on desktop XNNPACK the "
        "int8-dynamic kernels are the fast ones.")


def records(files: list[dict]) -> list[dict]:
    """Every full-integer record, a later file's replacing an earlier one's (same bundle and runner)."""
    rows: dict[tuple, dict] = {}
    for f in sorted((f for f in files if f["command"] == "full-integer"), key=lambda f: f["created"]):
        for r in f["results"]:
            rows[(r["bundle"], r["runner"])] = {**r, "_file": f}
    return list(rows.values())


def _equalized(r: dict) -> bool | None:
    """Static int8 rows: whether the residual stream was equalised (records before it existed were not)."""
    return bool(r.get("equalized")) if r["precision"] == "int8-static" else None


def _label(r: dict) -> str:
    if r["precision"] == "int8-static":
        how = "QAT" if r["training"] == "qat" else "post-training"
        return f"{r['runner']} ({how}{', equalised' if _equalized(r) else ''})"
    return f"{r['runner']}{' (QAT checkpoint)' if r['training'] == 'qat' else ''}"


def _distinct(rows: list[dict]) -> list[dict]:
    """One row per artifact kind: a model measured in two bundles (e.g. with and without equalisation) shows
    its float and dynamic rows once, from the later file."""
    kept: dict[tuple, dict] = {}
    for r in sorted(rows, key=lambda r: r["_file"]["created"]):
        kept[(r["training"], r["runner"], _equalized(r))] = r
    return list(kept.values())


def _calibration(r: dict) -> str:
    """Static rows' calibration texts; files written before the count was recorded say so."""
    if r["precision"] != "int8-static":
        return "–"
    return "not recorded" if r.get("calibration_texts") is None else f"{r['calibration_texts']:,d}"


def _cell(value, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def _table(rows: list[dict]) -> list[str]:
    lines = ["| artifact | dev score | Δ vs its float export | top-1 agreement with float | size (MB) | "
             "ops in float | Linears in float | calibration texts | latency (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    order = {"fp32": 0, "fp16": 1, "int8-dynamic": 2, "int8-static": 3}
    for r in sorted(_distinct(rows), key=lambda r: (r["training"] == "qat", order.get(r["precision"], 9),
                                                     r["backend"], bool(_equalized(r)))):
        agreement = r.get("top1_agreement_with_float")
        lines.append(f"| {_label(r)} | {r['score']:.2f} | {_cell(r.get('delta_vs_float'), '+.2f')} | "
                     f"{_cell(None if agreement is None else 100 * agreement, '.2f')}% | "
                     f"{r['size_bytes'] / 1e6:.1f} | {_cell(r.get('float_ops'), 'd')} | "
                     f"{_cell(r.get('linears_in_float'), 'd')} | {_calibration(r)} | {r['latency_ms']:.1f} |")
    return lines


def section(files: list[dict]) -> list[str]:
    rows = records(files)
    if not rows and not any(f["command"] == "full-integer-levers" for f in files):
        return []
    lines = ["## Full-integer int8 (for NPUs and DSPs)", "", NOTE, ""]
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        first = mine[0]
        sources = sorted({Path(r["_file"]["_path"]).name for r in mine})
        lines += [f"### {model}: {first['task']} dev ({first['metric']}, {first['examples']} examples)", ""]
        lines += _table(mine)
        lines += ["", f"From {', '.join(f'`{s}`' for s in sources)}; threads {first['threads']}, sequence "
                      f"{first['seq_len']}; the machine each file records is listed above.", ""]
    return lines + _levers([f for f in files if f["command"] == "full-integer-levers"])


def _levers(files: list[dict]) -> list[str]:
    """16-bit activations where int8 hurts: the same float export quantized three ways."""
    lines = []
    for f in sorted(files, key=lambda f: f["created"]):
        rows = f["results"]
        if not rows:
            continue
        lines += [f"### Activation bits, post-training: {Path(f['bundle']).name} ({rows[0]['task']} dev, "
                  f"{rows[0]['metric']}; `{Path(f['_path']).name}`)", "",
                  "a8: every activation int8 (what ships); a16-residual: the residual stream (ADD, MUL) int16, "
                  "the matmuls int8; a16: every activation int16.", "",
                  "| activations | dev score | top-1 agreement with float | size (MB) | latency (ms) |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['variant']} | {r['score']:.2f} | {100 * r['top1_agreement_with_float']:.2f}% | "
                  f"{r['size_bytes'] / 1e6:.1f} | {r['latency_ms']:.1f} |" for r in rows] + [""]
    return lines
