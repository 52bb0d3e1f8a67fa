"""The size-frontier table and plot (``benchmarks size-frontier``), printed by the command and in REPORT.md."""

from __future__ import annotations

from pathlib import Path

PNG = "size_frontier.png"
# fp32 first, then smaller files: the order a reader scans a frontier in
ORDER = {"fp32": 0, "fp16": 1, "int8-dynamic": 2, "int8-static": 3, "int4-dynamic": 4}


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["task"], r["bundle_name"], ORDER.get(r["precision"], 9), r["runner"]))


def table(rows: list[dict]) -> list[str]:
    lines = ["| bundle | task (metric) | recipe | MB | dev score | Δ vs teacher | p50 ms | speed-up vs fp32 |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in _sorted(rows):
        speedup = "–" if r.get("speedup_vs_fp32") is None else f"{r['speedup_vs_fp32']:.2f}×"
        lines.append(f"| {r['bundle_name']} | {r['task']} ({r['metric']}) | {r['runner']} | "
                     f"{r['size_bytes'] / 1e6:.1f} | {r['score']:.2f} | {r['delta_vs_teacher']:+.2f} | "
                     f"{r['p50_ms']:.2f} | {speedup} |")
    return lines


def settings_line(data: dict) -> str:
    s, m = data.get("settings") or {}, data.get("machine") or {}
    limit = f"; the first {s['limit']} dev examples of each task" if s.get("limit") else "; full dev sets"
    return (f"{m.get('cpu') or 'unknown CPU'} ({', '.join(m.get('matrix_flags') or []) or 'no matrix flags'}), "
            f"{data['created']}; batch 1 × {s.get('seq_len')} tokens, {s.get('threads')} thread(s), median of "
            f"{s.get('rounds')} alternating rounds over all the files{limit}; load average "
            f"{m.get('load_average')} → {m.get('load_average_end')}. Command: `{data.get('command_line')}`")


def plot(rows: list[dict], path: Path) -> Path:
    """x: file size (MB, log), y: dev score; one panel per task, the teacher's score solid and the gate
    (teacher − 1.0) dashed."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    plain_mb = FuncFormatter(lambda v, _: f"{v:g}")  # 20, 50, 100 rather than 2×10¹
    # minor ticks 20, 30, 50 only: 90 would collide with 100
    some_mb = FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "235" else "")

    tasks = sorted({r["task"] for r in rows})
    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.5), squeeze=False)
    colors = {name: f"C{i}" for i, name in enumerate(sorted({r["bundle_name"] for r in rows}))}
    for ax, task in zip(axes[0], tasks):
        mine = _sorted([r for r in rows if r["task"] == task])
        several = len({r["bundle_name"] for r in mine}) > 1
        placed = []
        for r in mine:
            mb = r["size_bytes"] / 1e6
            ax.scatter([mb], [r["score"]], color=colors[r["bundle_name"]], zorder=3)
            label = r["precision"] + (f" ({r['bundle_name']})" if several else "")
            # two bundles' fp32 files sit on one spot: stack their labels instead of overprinting
            near = sum(abs(mb / x - 1) < 0.1 and abs(r["score"] - y) < 0.1 for x, y in placed)
            placed.append((mb, r["score"]))
            # another bundle's point just right of this one at the same height would sit inside its label: raise it
            crowded = any(o["bundle_name"] != r["bundle_name"] and mb * 1.1 < o["size_bytes"] / 1e6 < mb * 3
                          and abs(o["score"] - r["score"]) < 0.15 for o in mine)
            ax.annotate(label, (mb, r["score"]), textcoords="offset points",
                        xytext=(5, 16 if crowded else 4 - 10 * near), fontsize=7)
        teacher = mine[0]["teacher"]
        ax.axhline(teacher, color="black", lw=1, label=f"teacher {teacher:.2f}")
        ax.axhline(mine[0]["gate"], color="black", lw=1, ls="--", label=f"gate (teacher − 1.0) {mine[0]['gate']:.2f}")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(plain_mb)
        ax.xaxis.set_minor_formatter(some_mb)
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.set_xlabel("TFLite file size (MB, log scale)")
        ax.set_ylabel(f"dev {mine[0]['metric']}")
        ax.set_title(task, fontsize=10)
        low = min([r["score"] for r in mine] + [mine[0]["gate"]])
        ax.set_ylim(low - 1.0, max([r["score"] for r in mine] + [teacher]) + 0.8)
        ax.set_xlim(min(r["size_bytes"] for r in mine) / 1e6 / 1.4, max(r["size_bytes"] for r in mine) / 1e6 * 1.8)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def latest(files: list[dict]) -> dict | None:
    """The run the report shows: the newest full one (a --limit run only when there is no other)."""
    mine = [f for f in files if f.get("command") == "size-frontier" and f.get("results")]
    return max(mine, key=lambda f: (not (f.get("settings") or {}).get("limit"), f["created"]), default=None)


def section(files: list[dict], out_dir: Path) -> list[str]:
    data = latest(files)
    if data is None:
        return []
    plot(data["results"], Path(out_dir) / PNG)
    source = f" (`{Path(data['_path']).name}`)" if data.get("_path") else ""
    return ["## Size frontier: the TFLite files phones run", "",
            f"Every verified TFLite file of each bundle: size on disk, dev score through the runtime, its distance "
            f"to the teacher the bundle's recovery record names (the gate: 1.0 point), and p50 latency; the speed-up "
            f"vs fp32 is against the same bundle's tflite:fp32, measured in the same alternating rounds. "
            f"{settings_line(data)}{source}.", ""] + table(data["results"]) + ["", f"![size frontier]({PNG})", ""]
