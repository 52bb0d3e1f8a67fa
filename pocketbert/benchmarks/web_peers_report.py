"""REPORT.md section (and the command's printed table): our web pipeline beside transformers.js and MediaPipe.

One row per page of a ``web-peers`` results file: runtime, file, threads, bytes downloaded (model, WebAssembly,
JavaScript, as served: uncompressed), cold load to first result, p50/p90 per timed length, and agreement with
the Python runtime on the same file.
"""

from __future__ import annotations

from pathlib import Path

MB = 1e6


def _pages(records: list[dict]) -> list[list[dict]]:
    """Records grouped by page (model, runtime, file, threads), in the order they were measured."""
    pages: dict[tuple, list[dict]] = {}
    for r in records:
        pages.setdefault((r["model"], r["runner"], r["threads"]), []).append(r)
    return list(pages.values())


def _ms(timed: dict | None) -> str:
    return f"{timed['p50_ms']:.1f} / {timed['p90_ms']:.1f}" if timed else "–"


def _agreement(r: dict) -> str:
    a = r.get("agreement")
    if not a:
        return "–"
    return f"{100 * a['fraction']:.1f}% of {a['texts']}"


def table(records: list[dict]) -> list[str]:
    lengths = sorted({r["seq_len"] for r in records})
    head = ("| model | runtime | file | threads | download MB (model + wasm + js) | cold load → first result ms | "
            + " | ".join(f"p50 / p90 ms @{n}" for n in lengths) + " | agrees with Python runtime |")
    lines = [head, "|" + "---|" * 6 + "---:|" * len(lengths) + "---:|"]
    for page in _pages(records):
        r = page[0]
        by_len = {p["seq_len"]: p for p in page}
        if r.get("skipped"):
            lines.append(f"| {r['model']} | {r['web_runtime']} | {r['runner'].split(' ', 1)[1]} | {r['threads']} | "
                         f"not run: {r['skipped']} |" + " |" * (1 + len(lengths) + 1))
            continue
        b = r["bytes_downloaded"]
        parts = [b["model"] / MB, b["wasm"] / MB, b["js"] / MB]
        download = f"{sum(parts):.1f} ({' + '.join(f'{part:.1f}' for part in parts)})"
        lines.append(f"| {r['model']} | {r['web_runtime']} | {r['runner'].split(' ', 1)[1]} | {r['threads']} | "
                     f"{download} | {r['init_ms']:.0f} | "
                     + " | ".join(_ms(by_len[n]["timed"]) if n in by_len else "–" for n in lengths)
                     + f" | {_agreement(r)} |")
    return lines


def section(files: list[dict]) -> list[str]:
    lines = []
    for f in (f for f in files if f.get("command") == "web-peers"):
        machine, device, settings = f.get("machine") or {}, f.get("device") or {}, f.get("settings") or {}
        versions = ", ".join(f"{k} {v}" for k, v in (settings.get("versions") or {}).items())
        load = (machine.get("load_average") or [None])[0]
        lines += [f"From `{Path(f.get('_path', 'web-peers.json')).name}` ({f['created']}"
                  f"{', quick mode: not figures to quote' if f.get('fast') else ''}): {machine.get('cpu')} "
                  f"({', '.join(machine.get('matrix_flags') or [])}), load average "
                  f"{'unknown' if load is None else f'{load:.2f}'}; {device.get('user_agent')}; {versions}; "
                  f"{settings.get('texts')} dev texts, {settings.get('warmup')} warm-up + {settings.get('runs')} "
                  "timed calls per length.", "", *table(f["results"]), ""]
    if not lines:
        return []
    return ["## In the browser: our pipeline, transformers.js and MediaPipe", "",
            "Each page opened cold in headless Chromium (fresh context, files served locally with COOP/COEP). "
            "Download: bytes the page fetched until it was idle, as served (uncompressed). Cold load: navigation "
            "start to the first answer. p50/p90: whole calls (tokenization, model, decoding) on a text of exactly "
            "that many tokens (MediaPipe's single-bucket file always runs its full length). Agreement: the share of "
            "the dev texts answered as the Python runtime answers on the same file (top label; NER entities and "
            "spans; transformers.js, which gives no spans: every token's label).", "", *lines]
