"""REPORT.md's corpus throughput section, from ``pocketbert-bench corpus`` results files."""

from __future__ import annotations

from pathlib import Path

ENGINES = {"pipeline": "pipeline in memory (no file)", "stream": "streaming job (`--input`)", "ray": "Ray Data"}


def _row(r: dict) -> str:
    engine = ENGINES[r["engine"]] + (f", {r['workers']} actor{'s' if r['workers'] > 1 else ''}"
                                     if r["engine"] == "ray" else "")
    startup = f"{r['startup_s']:.1f}" if r["engine"] == "ray" else "-"
    return (f"| {r['model']} | {r['dataset']} | {r['rows']} | {engine} | {r['seconds']:.1f} | {startup} | "
            f"{r['rows_per_s']:.0f} | {r['speedup_vs_stream']:.2f}x | {r['overhead_ms_per_row']:+.3f} |")


def section(files: list[dict]) -> list[str]:
    records = [(f, r) for f in files for r in f["results"]]
    if not records:
        return []
    lines = ["## Corpus throughput (streaming job and Ray Data)", "",
             "Each bundle's task training set as JSON Lines, through the pipeline in memory, the streaming job of "
             "`pocketbert-run BUNDLE --input … --output …`, and the same job on a local Ray instance "
             "(`--ray --workers N`), one intra-op thread per model instance. `s`: the job, Ray's start-up "
             "(`ray.init`) not included; `× stream`: speed-up against the streaming job; `overhead`: "
             "(engine s − pipeline s) / rows, the cost per row of reading, writing and the engine.", ""]
    for f in files:
        m = f.get("machine") or {}
        loads = [x for x in (m.get("load_average") or [])[:1] + (m.get("load_average_end") or [])[:1] if x is not None]
        busy = bool(loads) and max(loads) > (m.get("usable_cpus") or 1)
        lines.append(f"- `{Path(f['_path']).name}` ({f['created']}{', FAST MODE' if f.get('fast') else ''}): "
                     f"{m.get('cpu')}, {m.get('usable_cpus')} usable CPUs, load average {m.get('load_average')} "
                     f"→ {m.get('load_average_end')}; settings {f.get('settings')}"
                     + ("; **the machine was busy (load above its CPU count) and the engines ran one after another: "
                        "their ratios in this file measure the changing load as much as the engines**" if busy else ""))
    lines += ["", "| model | data | rows | engine | s | start-up s | sentences/s | × stream | overhead ms/row |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(r) for _, r in records]
    return lines + [""]
