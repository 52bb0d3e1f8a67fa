"""``python -m benchmarks report``: every results file → ``REPORT.md`` (tables) and PNG plots beside it.

Reads ``*.json`` results (latency, device, accuracy) from a directory, and writes:

* the headline per model: the fastest variant's speed-up over the plain fp32 TFLite export and over
  ONNX Runtime's optimised fp32 (both measured in the same run), with its accuracy delta when known;
* latency per variant and backend (p50/p90/p99, std, init, first inference, peak RSS, size, GEMM
  floor share, speed-ups), at the headline configuration and per sequence length and batch;
* phone results (``device``) in the same columns;
* accuracy per task and variant, deltas against the original, GLUE average;
* ``latency_by_variant.png``, ``latency_vs_seq_len.png``, ``accuracy_vs_speedup.png`` (the MobileBERT
  paper's OPT point drawn as a reference: 62 vs 192 ms on a Pixel 4, GLUE 77.7 vs 78.5).

Every number in it comes from the results files; the report states the machine, threads and library
versions they came from, and marks fast-mode files (tiny models, few runs) as not real figures.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from . import corpus_report, schema

HEADLINE = {"seq_len": 128, "batch": 1}
# A variant that loses more than this (points against the model's original) is no candidate for "best": the
# accuracy gates of recovered models allow 1.0 for the float model plus 0.5 for int8 (benchmarks.gates).
HEADLINE_MAX_DROP = 1.5
# MobileBERT paper (Sun et al., 2020): with the operational optimisations (NoNorm, ReLU) 62 ms on a Pixel 4 and
# GLUE 77.7; without them 192 ms and 78.5.  Drawn as one point: 3.1x faster for -0.8 points.
PAPER_OPT = {"label": "MobileBERT paper: OPT vs w/o OPT (Pixel 4)", "ms": 62.0, "baseline_ms": 192.0,
             "glue": 77.7, "baseline_glue": 78.5}


def read_all(results_dir: Path) -> tuple[list[dict], dict[str, str]]:
    """(every readable results file, {name: why not} of the other .json files): a report must not claim to
    be built from files it could not read."""
    files, skipped = [], {}
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            data = schema.read(path)
        except (OSError, ValueError, KeyError) as exc:  # unreadable, not UTF-8/JSON, another schema
            skipped[path.name] = str(exc).removeprefix(f"{path} ") or type(exc).__name__
            continue
        data["_path"] = str(path)
        files.append(data)
    return files, skipped


def load(results_dir: Path) -> list[dict]:
    return read_all(results_dir)[0]


def _fmt(value, digits=2, unit=""):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def _name(r: dict) -> str:
    """runner, + opts, + [tag] for another checkpoint of the model (variant ``recovered/plain-int8``)."""
    tag = (r.get("variant_name") or "").partition("/")
    return r["runner"] + (f" +{r['opts']}" if r.get("opts") else "") + (f" [{tag[0]}]" if tag[1] else "")


#: matrix instruction sets that decide int8/bf16 GEMM speed, strongest first
CPU_CLASSES = (("amx_int8", "AMX"), ("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"), ("avx2", "AVX2 only"),
               ("asimddp", "ARM dot product"), ("asimd", "ARM NEON"))


def cpu_class(machine: dict) -> str:
    flags = set((machine or {}).get("matrix_flags") or [])
    return next((label for flag, label in CPU_CLASSES if flag in flags), "unknown instruction sets")


def run_label(f: dict) -> str:
    machine = f.get("machine") or {}
    return f"{machine.get('cpu') or 'unknown CPU'}, {cpu_class(machine)} (`{Path(f['_path']).name}`)"


def _headline_threads(records: list[dict]) -> int | None:
    threads = sorted({r["threads"] for r in records})
    return 2 if 2 in threads else (threads[-1] if threads else None)


def _latency_rows(records: list[dict]) -> list[str]:
    head = ("| model | variant | backend | thr | seq | batch | p50 ms | p90 ms | p99 ms | std ms | init ms | "
            "first ms | peak RSS MB | size MB | GEMM floor | × plain TFLite fp32 | × ORT optimised fp32 |")
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in records:
        t = r["timed"] or {}
        floor = r.get("floor") or {}
        speed = r.get("speedup") or {}
        rows.append("| " + " | ".join([
            r.get("model_label") or r["model"], _name(r) + (" (peer)" if r["variant"] == "peer" else ""),
            r["backend"] + (f"/{r['delegate']}" if r.get("delegate") else ""), str(r["threads"]), str(r["seq_len"]),
            str(r["batch"]), _fmt(t.get("p50_ms")), _fmt(t.get("p90_ms")), _fmt(t.get("p99_ms")),
            _fmt(t.get("std_ms")), _fmt(r.get("init_ms"), 1), _fmt(r.get("first_ms"), 1),
            _fmt(r.get("peak_rss_mb"), 0), _fmt(r["size_bytes"] / 1e6 if r.get("size_bytes") else None, 1),
            f"{floor['fraction']:.0%} of {floor['ms']:.2f} ms {floor['precision']}" if floor.get("fraction") else "-",
            _fmt(speed.get("vs_tflite_plain_fp32"), 2, "x"), _fmt(speed.get("vs_ort_optimum_fp32"), 2, "x"),
        ]) + " |")
    return rows


def _machine_lines(data: dict) -> list[str]:
    m = data.get("machine") or {}
    if (data.get("device") or {}).get("kind") == "browser":  # web_demo's measure panel
        d = data["device"]
        return [f"- browser: {d.get('user_agent')}; navigator.hardwareConcurrency {d.get('hardware_concurrency')}; "
                f"{d.get('runtime')}"]
    if not m:
        d = data.get("device") or {}
        return [f"- phone: {d.get('model')} ({d.get('soc')}, Android {d.get('android')}, {d.get('abi')}), "
                f"serial {d.get('serial')}; benchmark_model settings {data.get('settings')}"]
    v = m.get("versions") or {}
    return [f"- CPU: {m.get('cpu')}, {m.get('usable_cpus')} usable of {m.get('logical_cpus')} logical CPUs; "
            f"matrix flags: {', '.join(m.get('matrix_flags') or []) or 'none'}",
            f"- load average at start {m.get('load_average')} and end {m.get('load_average_end')} "
            "(1, 5, 15 min; above ~0.2 the machine was not quiet)",
            "- " + ", ".join(f"{k} {val}" for k, val in v.items() if val) + f"; Python {m.get('python')}",
            f"- settings: {data.get('settings')}"]


def build(results_dir: Path, out: Path) -> Path:
    files = load(results_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# PocketBERT benchmark report", "",
             f"Generated by `python -m benchmarks report` from {len(files)} results file(s) in "
             f"`{_rel(results_dir, out)}`. Every figure below comes from those files.", ""]
    if any(f.get("fast") for f in files):
        lines += ["> **Fast mode results present: tiny random models and a handful of runs. They check the harness, "
                  "they are not figures to quote.**", ""]
    # each record knows its run: milliseconds are only ever compared within one run on one CPU
    latency = [{**r, "_run": run_label(f)} for f in files if f["command"] == "latency" for r in f["results"]]
    device = [r for f in files if f["command"] == "device" for r in f["results"]]
    from . import glue_report
    from .accuracy import add_deltas

    accuracy = add_deltas([r for f in files if f["command"] == "accuracy" for r in f["results"]])
    measured = [r for r in latency if not r.get("skipped")]
    lines += _headline(measured, accuracy)
    plots = _plots(measured, accuracy, out.parent, glue_report.plot_points(files))
    lines += ["## Where the figures come from", ""]
    for f in files:
        fast = ", FAST MODE" if f.get("fast") else ""
        lines += [f"`{Path(f['_path']).name}` ({f['command']}, {f['created']}{fast}):"]
        lines += _machine_lines(f) + [""]
    lines += _latency_sections(measured, files, plots)
    lines += _other_device_sections(files, device)
    lines += _accuracy_section(accuracy, plots)
    lines += glue_report.section(files, plots)
    from . import full_integer_report

    lines += full_integer_report.section(files)
    from . import onnx_peers_report, throughput_report

    lines += onnx_peers_report.section(files)
    lines += throughput_report.section(files)
    lines += _arm64_section([f for f in files if f["command"] == "arm64"])
    lines += corpus_report.section([f for f in files if f["command"] == "corpus"])
    from . import size_frontier_report

    lines += size_frontier_report.section(files, out.parent)
    skipped = [r for r in latency + device if r.get("skipped")]
    if skipped:
        lines += ["## Configurations not measured", ""]
        lines += [f"- {r['model']} {_name(r)} t{r['threads']} s{r['seq_len']} b{r['batch']}: {r['skipped']}"
                  for r in skipped] + [""]
    lines += ["## Reproduce", "", "See README.md, section Benchmarks, for the exact commands.", ""]
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def _latency_sections(measured: list[dict], files: list[dict], plots: dict) -> list[str]:
    if not measured:
        return []
    threads = _headline_threads(measured)
    at = [r for r in measured if r["seq_len"] == HEADLINE["seq_len"] and r["batch"] == 1]
    if not at:  # fast mode measures other lengths
        seq = sorted({r["seq_len"] for r in measured})[-1]
        at = [r for r in measured if r["seq_len"] == seq and r["batch"] == 1]
    lines = ["## Latency per variant and backend (batch 1)", "",
             "p50/p90/p99 over the timed runs of one process per configuration; `GEMM floor`: the time this "
             "CPU's fastest GEMM library needs for the model's own matrix products (int8 variants: weight "
             "products in int8) as a share of p50; `×`: speed-up against the peer of the same model, "
             "threads, length and batch in the same run (higher is faster). LiteRT allocates its tensors on "
             "the first call, so its init is small and its first inference large: compare init + first for "
             "cold start.",
             ""]
    lines += _latency_rows(sorted(at, key=_order)) + [""]
    if plots.get("by_variant"):
        lines += [f"![latency per variant]({plots['by_variant']})", ""]
    batched = [r for r in measured if r["batch"] > 1]
    if batched:
        lines += ["## Batched (ONNX Runtime runs the batch at once; LiteRT runs its rows one after another)", ""]
        lines += _latency_rows(sorted(batched, key=_order)) + [""]
    lines += _seq_table(measured, threads)
    if plots.get("vs_seq"):
        lines += [f"![latency vs sequence length]({plots['vs_seq']})", ""]
    return lines + _floor_table(files)


def _other_device_sections(files: list[dict], device: list[dict]) -> list[str]:
    lines = []
    if device:
        lines += ["## On the phone (benchmark_model)", "",
                  "`benchmark_model` prints its mean and, in recent builds, p5/median/p95; p90/p99 are not printed "
                  "and stay empty. Speed-ups are against the plain bundle's `tflite:fp32` on the same phone.", ""]
        lines += _latency_rows(sorted([r for r in device if not r.get("skipped")], key=_order)) + [""]
    browser = [r for f in files if f["command"] == "browser" for r in f["results"]]
    if browser:
        lines += ["## In a web browser (LiteRT.js, WebAssembly)", "",
                  "Saved from web_demo's measure panel on the device that opened the page (its browser is named "
                  "under \"Where the figures come from\"): model time per bucket, single-threaded, tokenization "
                  "excluded.", ""]
        lines += _latency_rows(sorted([r for r in browser if not r.get("skipped")], key=_order)) + [""]
    return lines


def _arm64_section(files: list[dict]) -> list[str]:
    """Parity of the TFLite artifacts on LiteRT's aarch64 build (emulated): agreement only, never time."""
    records = [r for f in files for r in f["results"]]
    if not records:
        return []
    from .arm64 import table

    lines = ["## LiteRT on aarch64 (emulated)", "",
             "LiteRT's aarch64 wheel (the interpreter and XNNPACK's ARM kernels phones run) on an arm64 Python under "
             "QEMU user-mode emulation, against this machine's x86 LiteRT on the same rows, every row padded or cut "
             "to each bucket signature. The emulated CPU's HWCAPs decide XNNPACK's int8 path (NEON only, dot "
             "product, i8mm); LiteRT does not log which kernels it picked, so the column lists the features it "
             "saw. Pass: fp32 and fp16 max |Δ| ≤ 1e-4·max(1, |logit|); int8 top-1 ≥ 99% and cosine ≥ 0.999. "
             "Emulated time says nothing about a phone and is not reported; no phone, delegate or timing here.", ""]
    for f in files:
        d = f.get("device") or {}
        versions = ", ".join(f"{k} {v}" for k, v in (d.get("versions") or {}).items())
        lines += [f"- `{Path(f['_path']).name}` ({f['created']}): {d.get('emulator')}, {d.get('python')}, {versions}; "
                  f"settings {f.get('settings')}"]
    lines += ["", table(records), ""]
    failed = [r for r in records if not r["passed"]]
    lines += [f"{len(records) - len(failed)} of {len(records)} artifact × bucket × CPU checks pass.", ""]
    differs = sorted({(r["model"], r["recipe"], r["cpu"], r["instructions"]) for r in failed})
    lines += [f"- differs: {model} {recipe} on emulated {cpu} ({what})" for model, recipe, cpu, what in differs]
    if differs:  # the emulator can be wrong too: only a device with those features settles it
        lines += ["", "A difference on one emulated CPU only can be QEMU's emulation of that CPU's instructions as "
                  "well as LiteRT's kernels for them: confirm on a device with those features before trusting or "
                  "blaming the artifact there."]
    return lines + ([""] if differs else [])


def _rel(path: Path, out: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(out.parent.resolve().parent))
    except ValueError:
        return str(path)


def _order(r: dict):
    return (r["model"], r["threads"], r["seq_len"], r["batch"], r["variant"] == "peer", r["backend"], _name(r))


def _headline(measured: list[dict], accuracy: list[dict]) -> list[str]:
    if not measured:
        return ["No latency results yet: run `python -m benchmarks latency …` first.", ""]
    threads = _headline_threads(measured)
    lines = ["## Headline", "",
             f"Sequence {HEADLINE['seq_len']} (or the longest measured), batch 1, {threads} threads. The best variant "
             "is the fastest of the bundles' own artifacts that lose at most "
             f"{HEADLINE_MAX_DROP} points of accuracy against the model's original (a model without accuracy "
             "figures: the fastest, marked 'not measured'); speed-ups are p50 ratios within one run.", "",
             "One row per model and run: runs on other CPUs are not comparable in milliseconds.", "",
             "| model | CPU (results file) | best variant | p50 ms | × plain fp32 TFLite | × ORT optimised fp32 | "
             "accuracy Δ (GLUE avg or task) |", "|---|---|---|---|---|---|---|"]
    by_model = defaultdict(list)
    for r in measured:
        if r["threads"] == threads and r["batch"] == 1:
            by_model[(r["model"], r.get("_run", ""))].append(r)
    noise = []
    for (model, run), rows in sorted(by_model.items()):
        seq = HEADLINE["seq_len"] if any(r["seq_len"] == HEADLINE["seq_len"] for r in rows) else max(
            r["seq_len"] for r in rows)
        own = [r for r in rows if r["seq_len"] == seq and r["variant"] == "bundle"]
        if not own:
            continue
        eligible = [r for r in own if (_accuracy_delta(accuracy, r) or 0.0) >= -HEADLINE_MAX_DROP]
        if not eligible:
            continue
        best = min(eligible, key=schema.typical_ms)
        s = best.get("speedup") or {}
        delta = _accuracy_delta(accuracy, best)
        lines.append(f"| {best.get('model_label') or model} | {run} | {_name(best)} | {schema.typical_ms(best):.2f} | "
                     f"{_fmt(s.get('vs_tflite_plain_fp32'), 2, 'x')} | {_fmt(s.get('vs_ort_optimum_fp32'), 2, 'x')} | "
                     f"{_fmt(delta, 2) if delta is not None else 'not measured'} |")
        same = [r for r in rows if r["seq_len"] == seq and r["runner"] == "tflite:fp32" and not r.get("opts")
                and r["variant"] == "bundle" and (r.get("speedup") or {}).get("vs_tflite_plain_fp32")
                and r.get("variant_name") in (None, "plain-int8", "original")]
        noise += [f"{model}: {r['speedup']['vs_tflite_plain_fp32']:.2f}x" for r in same[:1]]
    lines.append("")
    if noise:
        lines += ["Noise check: a bundle converted without `--opt` holds the very file the plain-TFLite peer runs, "
                  "measured twice in the same run; 1.00x means no drift between the two measurements: "
                  + ", ".join(noise) + ".", ""]
    return lines


def _accuracy_delta(accuracy: list[dict], r: dict) -> float | None:
    match = [a for a in accuracy if a.get("model") == r["model"] and a.get("runner") == r["runner"]
             and (a.get("opts") or "") == (r.get("opts") or "") and a.get("delta") is not None
             and a.get("variant_name") == r.get("variant_name")]
    glue = [a for a in match if a.get("task") == "glue-average"]
    chosen = glue or match
    return sum(a["delta"] for a in chosen) / len(chosen) if chosen else None


def _seq_table(measured: list[dict], threads: int) -> list[str]:
    rows = [r for r in measured if r["threads"] == threads and r["batch"] == 1]
    seqs = sorted({r["seq_len"] for r in rows})
    if len(seqs) < 2:
        return []
    table = defaultdict(dict)
    for r in rows:
        table[(r["model"], _name(r))][r["seq_len"]] = schema.typical_ms(r)
    lines = [f"## Latency vs sequence length (p50 ms, batch 1, {threads} threads)", "",
             "| model | variant | " + " | ".join(f"s{s}" for s in seqs) + " |", "|---|---|" + "---|" * len(seqs)]
    for (model, name), values in sorted(table.items()):
        lines.append(f"| {model} | {name} | " + " | ".join(_fmt(values.get(s)) for s in seqs) + " |")
    return lines + [""]


def _floor_table(files: list[dict]) -> list[str]:
    entries = [e for f in files if f["command"] == "latency" for e in f.get("gemm_floor") or [] if "shape" in e]
    if not entries:
        return []
    lines = ["## GEMM throughput of this CPU at the models' shapes", "",
             "Each distinct product shape (batch×m×k×n), timed alone with the fastest implementation available "
             "(fp32: torch.mm / ONNX Runtime MatMul; int8: ONNX Runtime MatMulInteger / torch._int_mm), minus "
             "that method's empty-call overhead.", "",
             "| shape | precision | threads | ms | GMAC/s | method |", "|---|---|---|---|---|---|"]
    for e in sorted(entries, key=lambda e: (e["precision"], e["threads"], e["shape"]))[:60]:
        lines.append(f"| {e['shape']} | {e['precision']} | {e['threads']} | {e['ms']:.4f} | {e['gmacs_per_s']:.0f} | "
                     f"{e['method']} |")
    return lines + [""]


def _accuracy_section(accuracy: list[dict], plots: dict) -> list[str]:
    if not accuracy:
        lines = ["## Accuracy", "", "No accuracy results yet (`python -m benchmarks accuracy …`): the plot shows only "
                 "the MobileBERT paper's reference point.", ""]
        return lines + ([f"![accuracy delta vs speed-up]({plots['accuracy']})", ""] if plots.get("accuracy") else [])
    lines = ["## Accuracy (GLUE metric per task on dev, CoNLL-2003 entity F1 via seqeval)", "",
             "Δ: points against the same model's original (its plain `onnx:fp32`, which equals PyTorch), same task "
             "and split.", "",
             "| model | variant | artifact | task | split | metric | score | Δ vs original | examples |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in sorted(accuracy, key=lambda a: (a["model"], a["task"], str(a.get("variant_name")), _name(a))):
        lines.append(f"| {a['model']} | {a.get('variant_name') or '-'} | {_name(a)} | {a['task']} | "
                     f"{a.get('split', '-')} | {a.get('metric', '-')} | {_fmt(a.get('score'), 2)} | "
                     f"{_fmt(a.get('delta'), 2)} | {a.get('examples', '-')} |")
    notes = sorted({n for a in accuracy for n in a.get("notes") or []})
    lines += [""] + [f"- {n}" for n in notes] + [""]
    if plots.get("accuracy"):
        lines += [f"![accuracy delta vs speed-up]({plots['accuracy']})", ""]
    return lines


def _plots(measured: list[dict], accuracy: list[dict], out_dir: Path, extra_points=()) -> dict:
    """The latency plots and the accuracy-vs-speed-up plot; ``extra_points`` ((label, speed-up, Δ): the GLUE
    run's artifacts against their teachers) join the latter."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display

    made = _latency_plots(measured, out_dir) if measured else {}
    made["accuracy"] = _accuracy_plot(measured, accuracy, out_dir, extra_points)
    return made


def _latency_plots(measured: list[dict], out_dir: Path) -> dict:
    import matplotlib.pyplot as plt

    made = {}
    if measured:
        threads = _headline_threads(measured)
        rows = [r for r in measured if r["threads"] == threads and r["batch"] == 1]
        seq = HEADLINE["seq_len"] if any(r["seq_len"] == HEADLINE["seq_len"] for r in rows) else max(
            r["seq_len"] for r in rows)
        at = sorted([r for r in rows if r["seq_len"] == seq], key=_order)
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(at) + 1.5))
        labels = [f"{r['model']} · {_name(r)}" for r in at]
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
                series[r.get("model_label") or r["model"]][_name(r)][r["seq_len"]] = schema.typical_ms(r)
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


def _accuracy_plot(measured: list[dict], accuracy: list[dict], out_dir: Path, extra_points) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    paper = PAPER_OPT
    ax.scatter([paper["baseline_ms"] / paper["ms"]], [paper["glue"] - paper["baseline_glue"]], marker="*", s=160,
               color="black", label=paper["label"])
    threads = _headline_threads(measured) if measured else None
    seqs = {r["seq_len"] for r in measured}
    seq = HEADLINE["seq_len"] if HEADLINE["seq_len"] in seqs else max(seqs, default=None)
    for r in measured:  # one point per variant: the headline configuration only
        delta = _accuracy_delta(accuracy, r)
        speed = (r.get("speedup") or {}).get("vs_tflite_plain_fp32")
        if (delta is not None and speed and r["variant"] == "bundle" and r["batch"] == 1
                and r["threads"] == threads and r["seq_len"] == seq):
            ax.scatter([speed], [delta], label=f"{r['model']} · {_name(r)} (t{r['threads']} s{r['seq_len']})")
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
