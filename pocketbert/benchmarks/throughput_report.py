"""REPORT.md section of ``benchmarks throughput``: sentences/s at real lengths, buckets vs one bucket of 128."""

from __future__ import annotations

from pathlib import Path

NOTE = ("Real sentences through the runtime end to end (tokenization, batching, model, post-processing). "
        "`natural`: TFLite rows in the smallest bucket that holds them (32/64/128/256), ONNX at each batch's "
        "longest row; `padded`: every row padded to 128 tokens, what a one-bucket (128) TFLite bundle "
        "or fixed-length ONNX input runs. ONNX dynamic int8 runs each row alone at its own length (no padded "
        "mode). Overhead: wall time outside the model, as a share of model time (target < 5%).")


def section(files: list[dict]) -> list[str]:
    mine = [f for f in files if f.get("command") == "throughput"]
    if not mine:
        return []
    lines = ["## Real lengths: sentences/s through the runtime", "", NOTE, ""]
    for f in mine:
        settings = f.get("settings") or {}
        machine = f.get("machine") or {}
        lines += [f"From `{Path(f['_path']).name}` ({f['created']}): {machine.get('cpu')}, "
                  f"{', '.join(machine.get('matrix_flags') or [])}; {settings.get('threads')} threads, best of "
                  f"{settings.get('rounds')} rounds, load average {machine.get('load_average')} at the start"
                  + (f"; the first {settings['limit']} sentences of each dev set" if settings.get("limit") else "")
                  + ".", ""]
        lines += ["| bundle | data (median tokens, rows > 128) | artifact | mode | sentences/s | vs padded | "
                  "overhead |", "|---|---|---|---|---:|---:|---:|"]
        for r in sorted(f["results"], key=lambda r: (r["model"], r["runner"], r["mode"])):
            lines.append(_row(r))
        lines.append("")
    return lines


def _row(r: dict) -> str:
    ratio = f"{r['vs_padded']:.2f}x" if r.get("vs_padded") else "–"
    mode = r["mode"] + ("" if r.get("pad_to") in (None, 128) else f" to {r['pad_to']}")
    data = f"{r['dataset']} ({r['tokens_median']:g}, {r['rows_over_128']})"
    return (f"| {r['model']} | {data} | {r['runner']} | {mode} | {r['sentences_per_s']:.1f} | {ratio} | "
            f"{r['overhead_share']:.1%} |")
