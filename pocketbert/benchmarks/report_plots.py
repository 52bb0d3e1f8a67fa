"""The report's plots: latency per variant, latency against sequence length, and accuracy delta against speed-up
(with the MobileBERT paper's OPT point as the reference)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from . import schema
from .report_common import HEADLINE, accuracy_delta, headline_threads, row_name, row_order

# MobileBERT paper (Sun et al., 2020): with the operational optimisations (NoNorm, ReLU) 62 ms on a Pixel 4 and
# GLUE 77.7; without them 192 ms and 78.5.  Drawn as one point: 3.1x faster for -0.8 points.
PAPER_OPT = {"label": "MobileBERT paper: OPT vs w/o OPT (Pixel 4)", "ms": 62.0, "baseline_ms": 192.0,
             "glue": 77.7, "baseline_glue": 78.5}

def plots(measured: list[dict], accuracy: list[dict], out_dir: Path, extra_points=()) -> dict:
    """The latency plots and the accuracy-vs-speed-up plot; ``extra_points`` ((label, speed-up, Δ): the GLUE
    run's artifacts against their teachers) join the latter."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display

    made = latency_plots(measured, out_dir) if measured else {}
    made["accuracy"] = accuracy_plot(measured, accuracy, out_dir, extra_points)
    return made


def latency_plots(measured: list[dict], out_dir: Path) -> dict:
    import matplotlib.pyplot as plt

    made = {}
    if measured:
        threads = headline_threads(measured)
        rows = [r for r in measured if r["threads"] == threads and r["batch"] == 1]
        seq = HEADLINE["seq_len"] if any(r["seq_len"] == HEADLINE["seq_len"] for r in rows) else max(
            r["seq_len"] for r in rows)
        at = sorted([r for r in rows if r["seq_len"] == seq], key=row_order)
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(at) + 1.5))
        labels = [f"{r['model']} · {row_name(r)}" for r in at]
        colors = ["tab:gray" if r["variant"] == "peer" else ("tab:blue" if r["backend"] == "onnx" else "tab:orange")
                  for r in at]
        ax.barh(range(len(at)), [schema.typical_ms(r) for r in at], color=colors)
        ax.set_yticks(range(len(at)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")  # PyTorch eager and int8 TFLite differ by 100x
        ax.set_xlabel(f"p50 ms, log scale (seq {seq}, batch 1, {threads} threads; "
                      "blue ONNX, orange TFLite, grey peers)")
        fig.tight_layout()
        fig.savefig(out_dir / "latency_by_variant.png", dpi=110)
        plt.close(fig)
        made["by_variant"] = "latency_by_variant.png"
        # One panel per model measured at several lengths: the peers and the bundles' int8 artifacts (the
        # fp32 artifacts duplicate the peers' curves and would bury the figure).
        series = defaultdict(lambda: defaultdict(dict))
        for r in rows:
            if r["variant"] == "peer" or "int8" in r["runner"]:
                series[r.get("model_label") or r["model"]][row_name(r)][r["seq_len"]] = schema.typical_ms(r)
        swept = sorted(m for m, lines in series.items() if any(len(v) > 1 for v in lines.values()))
        if swept:
            cols = min(2, len(swept))
            fig_rows = -(-len(swept) // cols)
            fig, axes = plt.subplots(fig_rows, cols, figsize=(6.5 * cols, 4.2 * fig_rows), squeeze=False)
            for ax, model in zip(axes.flat, swept):
                for name, values in sorted(series[model].items()):
                    xs = sorted(values)
                    ax.plot(xs, [values[x] for x in xs], marker="o", label=name,
                            linestyle="--" if name.startswith("peer") else "-")
                ax.set_title(model, fontsize=9)
                ax.set_xlabel("sequence length (tokens)")
                ax.set_ylabel("p50 ms (log)")
                ax.set_yscale("log")
                ax.legend(fontsize=6)
            for ax in list(axes.flat)[len(swept):]:
                ax.axis("off")
            fig.suptitle(f"batch 1, {threads} threads; dashed: peers", fontsize=9)
            fig.tight_layout()
            fig.savefig(out_dir / "latency_vs_seq_len.png", dpi=100)
            plt.close(fig)
            made["vs_seq"] = "latency_vs_seq_len.png"
    return made


def accuracy_plot(measured: list[dict], accuracy: list[dict], out_dir: Path, extra_points) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    paper = PAPER_OPT
    ax.scatter([paper["baseline_ms"] / paper["ms"]], [paper["glue"] - paper["baseline_glue"]], marker="*", s=160,
               color="black", label=paper["label"])
    threads = headline_threads(measured) if measured else None
    seqs = {r["seq_len"] for r in measured}
    seq = HEADLINE["seq_len"] if HEADLINE["seq_len"] in seqs else max(seqs, default=None)
    for r in measured:  # one point per variant: the headline configuration only
        delta = accuracy_delta(accuracy, r)
        speed = (r.get("speedup") or {}).get("vs_tflite_plain_fp32")
        if (delta is not None and speed and r["variant"] == "bundle" and r["batch"] == 1
                and r["threads"] == threads and r["seq_len"] == seq):
            ax.scatter([speed], [delta], label=f"{r['model']} · {row_name(r)} (t{r['threads']} s{r['seq_len']})")
    for label, speed, delta in extra_points:  # vs the teacher's fp32 TFLite, the converter's s128 1-thread median
        ax.scatter([speed], [delta], marker="^", label=f"{label} (vs teacher, s128 t1)")
    ax.axhline(0, color="gray", lw=0.5)
    ax.axvline(1, color="gray", lw=0.5)
    ax.set_xlim(left=0)
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, -1.0), max(high, 0.5))
    ax.set_xlabel("speed-up over the plain fp32 TFLite export (×)")
    ax.set_ylabel("accuracy Δ vs original (points)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out_dir / "accuracy_vs_speedup.png", dpi=110)
    plt.close(fig)
    return "accuracy_vs_speedup.png"
