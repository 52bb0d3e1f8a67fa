"""REPORT.md's latency sections: the headline per model and run, latency per variant and backend (batch 1 and
batched), against sequence length, the GEMM floor, and the same columns for phones and browsers."""

from __future__ import annotations

from collections import defaultdict

from . import schema
from .report_common import HEADLINE, HEADLINE_MAX_DROP, accuracy_delta, fmt, headline_threads, row_name, row_order


def headline(measured: list[dict], accuracy: list[dict]) -> list[str]:
    if not measured:
        return ["No latency results yet: run `pocketbert-bench latency …` first.", ""]
    threads = headline_threads(measured)
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
        eligible = [r for r in own if (accuracy_delta(accuracy, r) or 0.0) >= -HEADLINE_MAX_DROP]
        if not eligible:
            continue
        best = min(eligible, key=schema.typical_ms)
        s = best.get("speedup") or {}
        delta = accuracy_delta(accuracy, best)
        lines.append(f"| {best.get('model_label') or model} | {run} | {row_name(best)} | "
                     f"{schema.typical_ms(best):.2f} | "
                     f"{fmt(s.get('vs_tflite_plain_fp32'), 2, 'x')} | {fmt(s.get('vs_ort_optimum_fp32'), 2, 'x')} | "
                     f"{fmt(delta, 2) if delta is not None else 'not measured'} |")
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


def latency_sections(measured: list[dict], files: list[dict], plots: dict) -> list[str]:
    if not measured:
        return []
    threads = headline_threads(measured)
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
    lines += latency_rows(sorted(at, key=row_order)) + [""]
    if plots.get("by_variant"):
        lines += [f"![latency per variant]({plots['by_variant']})", ""]
    batched = [r for r in measured if r["batch"] > 1]
    if batched:
        lines += ["## Batched (ONNX Runtime runs the batch at once; LiteRT runs its rows one after another)", ""]
        lines += latency_rows(sorted(batched, key=row_order)) + [""]
    lines += _seq_table(measured, threads)
    if plots.get("vs_seq"):
        lines += [f"![latency vs sequence length]({plots['vs_seq']})", ""]
    return lines + _floor_table(files)


def device_sections(files: list[dict], device: list[dict]) -> list[str]:
    lines = []
    if device:
        webview = any(r.get("where") == "android-webview" for r in device)
        lines += ["## On the phone (benchmark_model" + ("; the demo APK's System WebView)" if webview else ")"), "",
                  "`benchmark_model` prints its mean and, in recent builds, p5/median/p95; p90/p99 are not printed "
                  "and stay empty. Speed-ups are against the plain bundle's `tflite:fp32` on the same phone."
                  + (" `webview-litertjs-wasm:*` rows: the demo APK's page in the phone's System WebView (LiteRT.js, "
                     "WebAssembly, 1 thread), timed by the page itself, model time per bucket, tokenization "
                     "excluded; benchmark_model's rows are native." if webview else ""), ""]
        lines += latency_rows(sorted([r for r in device if not r.get("skipped")], key=row_order)) + [""]
    browser = [r for f in files if f["command"] == "browser" for r in f["results"]]
    if browser:
        lines += ["## In a web browser (LiteRT.js, WebAssembly)", "",
                  "Saved from web_demo's measure panel on the device that opened the page (its browser is named "
                  "under \"Where the figures come from\"): model time per bucket, single-threaded, tokenization "
                  "excluded.", ""]
        lines += latency_rows(sorted([r for r in browser if not r.get("skipped")], key=row_order)) + [""]
    return lines


def latency_rows(records: list[dict]) -> list[str]:
    head = ("| model | variant | backend | thr | seq | batch | p50 ms | p90 ms | p99 ms | std ms | init ms | "
            "first ms | peak RSS MB | size MB | GEMM floor | × plain TFLite fp32 | × ORT optimised fp32 |")
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in records:
        t = r["timed"] or {}
        floor = r.get("floor") or {}
        speed = r.get("speedup") or {}
        rows.append("| " + " | ".join([
            r.get("model_label") or r["model"], row_name(r) + (" (peer)" if r["variant"] == "peer" else ""),
            r["backend"] + (f"/{r['delegate']}" if r.get("delegate") else ""), str(r["threads"]), str(r["seq_len"]),
            str(r["batch"]), fmt(t.get("p50_ms")), fmt(t.get("p90_ms")), fmt(t.get("p99_ms")),
            fmt(t.get("std_ms")), fmt(r.get("init_ms"), 1), fmt(r.get("first_ms"), 1),
            fmt(r.get("peak_rss_mb"), 0), fmt(r["size_bytes"] / 1e6 if r.get("size_bytes") else None, 1),
            f"{floor['fraction']:.0%} of {floor['ms']:.2f} ms {floor['precision']}" if floor.get("fraction") else "-",
            fmt(speed.get("vs_tflite_plain_fp32"), 2, "x"), fmt(speed.get("vs_ort_optimum_fp32"), 2, "x"),
        ]) + " |")
    return rows


def _seq_table(measured: list[dict], threads: int) -> list[str]:
    rows = [r for r in measured if r["threads"] == threads and r["batch"] == 1]
    seqs = sorted({r["seq_len"] for r in rows})
    if len(seqs) < 2:
        return []
    table = defaultdict(dict)
    for r in rows:
        table[(r["model"], row_name(r))][r["seq_len"]] = schema.typical_ms(r)
    lines = [f"## Latency vs sequence length (p50 ms, batch 1, {threads} threads)", "",
             "| model | variant | " + " | ".join(f"s{s}" for s in seqs) + " |", "|---|---|" + "---|" * len(seqs)]
    for (model, name), values in sorted(table.items()):
        lines.append(f"| {model} | {name} | " + " | ".join(fmt(values.get(s)) for s in seqs) + " |")
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
