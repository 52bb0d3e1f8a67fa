"""REPORT.md section: our best ONNX files against ONNX Runtime's transformer optimizer, per model and run.

For each latency file and model: the fastest of our ``onnx:fp32`` files (any variant: plain or with
``--opt``) against ``peer:ort-optimum-fp32``, the fastest of our ``onnx:int8-*`` against
``peer:ort-optimum-int8-dynamic``, at each measured threads × sequence × batch, p50 from the same run;
and a ``best`` row: our fastest file of any backend and precision against the faster of the two peers.
"""

from __future__ import annotations

from pathlib import Path

from .schema import typical_ms

PAIRS = (("fp32", "peer:ort-optimum-fp32"), ("int8", "peer:ort-optimum-int8-dynamic"))


def _label(r: dict) -> str:
    return r["runner"] + (f" +{r['opts']}" if r.get("opts") else "")


def rows(records: list[dict]) -> list[str]:
    measured = [r for r in records if not r.get("skipped")]
    keys = sorted({(r["model"], r["threads"], r["seq_len"], r["batch"]) for r in measured})
    out = []
    for model, threads, seq, batch in keys:
        key = (model, threads, seq, batch)
        same = [r for r in measured if (r["model"], r["threads"], r["seq_len"], r["batch"]) == key]
        ours_all = [r for r in same if r.get("variant") != "peer"]
        for precision, peer_name in PAIRS:
            peer = next((r for r in same if r["runner"] == peer_name), None)
            ours = [r for r in ours_all if r["backend"] == "onnx" and r["precision"].startswith(precision)]
            if peer is not None and ours:
                # the plain file is the same model as the peer; an --opt file needs recovery to be one
                plain = min((r for r in ours if not r.get("opts")), key=typical_ms, default=None)
                out.append(_row(key, precision, plain, min(ours, key=typical_ms), peer=peer))
        # the question a user asks: our fastest file of any kind against the fastest thing ORT's tools give
        peers = [r for r in same if r["runner"] in dict(PAIRS).values()]
        if len(peers) == len(PAIRS) and ours_all:
            out.append(_row(key, "best", None, min(ours_all, key=typical_ms), peer=min(peers, key=typical_ms)))
    return out


def _row(key: tuple, precision: str, plain: dict | None, best: dict, peer: dict) -> str:
    model, threads, seq, batch = key
    mine, theirs = typical_ms(best), typical_ms(peer)
    peer_label = "" if precision != "best" else f" ({peer['runner'].removeprefix('peer:ort-optimum-')})"
    same_model = (f"{typical_ms(plain):.2f} | {theirs / typical_ms(plain):.2f}x" if plain else "– | –")
    return (f"| {model} | t{threads} s{seq} b{batch} | {precision} | {same_model} | {_label(best)} | {mine:.2f} | "
            f"{theirs:.2f}{peer_label} | {theirs / mine:.2f}x |")


def section(files: list[dict]) -> list[str]:
    lines = []
    for f in (f for f in files if f.get("command") == "latency"):
        table = rows(f["results"])
        if not table:
            continue
        machine = f.get("machine") or {}
        lines += [f"From `{Path(f['_path']).name}` ({f['created']}): {machine.get('cpu')} "
                  f"({', '.join(machine.get('matrix_flags') or [])}), load average {machine.get('load_average')}.", "",
                  "| model | config | precision | our plain file p50 ms | plain vs peer | our fastest file | p50 ms | "
                  "ORT optimizer peer p50 ms | fastest vs peer |", "|---|---|---|---:|---:|---|---:|---:|---:|",
                  *table, ""]
    if not lines:
        return []
    return ["## ONNX: our files vs ONNX Runtime's transformer optimizer", "",
            "Per precision, our plain ONNX file (the same model as the peer) and our fastest ONNX file (plain or "
            "with --opt, which needs recovery to keep accuracy) against the ORT-optimizer peers of the same "
            "checkpoint, measured in the same run (speed-up = peer p50 / ours); the best row is our fastest file "
            "of any kind in the run against the faster peer.", "", *lines]
