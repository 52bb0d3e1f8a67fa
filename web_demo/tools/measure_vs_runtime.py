"""The page's latency in headless Chromium beside the Python runtime's, same bundle, bucket and thread count.

    .venv/bin/python web_demo/tools/measure_vs_runtime.py NER_BUNDLE [--runs 30] [--warmup 5]
        [--screenshot web_demo/screenshot-ner.png] [--results DIR]

Builds the page with the bundle into a temporary folder, serves it on localhost, and for the int8-dynamic and
fp32 TFLite artifacts opens it cold (fresh profile) in Debian's chromium: page load to first result, then the
measure panel's p50/p90 per bucket (model time, one thread).  Then times the Python runtime's LiteRT backend
(threads=1) on rows of the same lengths, in the same session, and prints one Markdown table with the ratio.
``--results DIR`` also saves the browser records (benchmarks results schema) for ``pocketbert-bench report``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web_demo"
sys.path.insert(0, str(REPO))
PRECISIONS = ("int8-dynamic", "fp32")


def serve(root: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def runtime_p50(bundle: Path, precision: str, buckets: list[int], warmup: int, runs: int) -> dict[int, float]:
    """Median ms of the runtime's LiteRT backend (one thread) on one row of exactly ``bucket`` tokens."""
    from pocketbert import runtime
    from pocketbert.runtime import batching

    pipeline = runtime.load(bundle, "tflite", precision=precision, threads=1)
    rng = np.random.default_rng(0)
    out = {}
    for bucket in buckets:
        ids = [pipeline.encoder.cls_id, *rng.integers(1000, pipeline.encoder.vocab_size, bucket - 2).tolist(),
               pipeline.encoder.sep_id]
        feeds = batching.pad([(ids, [0] * bucket)], pipeline.bundle.input_names, pipeline.encoder.pad_id)
        for _ in range(warmup):
            pipeline.backend.run(feeds)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            pipeline.backend.run(feeds)
            times.append((time.perf_counter() - start) * 1000)
        out[bucket] = float(np.median(times))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--screenshot", type=Path)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args()
    from ensure_chromium import ensure  # beside this script (sys.path[0])

    chromium = ensure(log=lambda line: print(line, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        subprocess.run(["node", str(WEB / "build.mjs"), "--out", str(site), "--ner", str(args.bundle)], check=True)
        server = serve(site)
        spec = {"url": f"http://127.0.0.1:{server.server_address[1]}/", "chromium": chromium,
                "profile_root": str(Path(tmp) / "profiles"), "precisions": list(PRECISIONS), "warmup": args.warmup,
                "runs": args.runs, "screenshot": str(args.screenshot.resolve()) if args.screenshot else None}
        (Path(tmp) / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        subprocess.run(["node", str(WEB / "tools" / "measure_page.mjs"), str(Path(tmp) / "spec.json"),
                        str(Path(tmp) / "out.json")], check=True, cwd=WEB)
        server.shutdown()
        page = json.loads((Path(tmp) / "out.json").read_text(encoding="utf-8"))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; CPU {platform.processor() or platform.machine()}; "
          f"browser {page[0]['measured']['device']['user_agent']}; "
          f"hardwareConcurrency {page[0]['measured']['device']['hardware_concurrency']}")
    print("\n| artifact | page load → first result (cold) | bucket | browser p50 ms | browser p90 ms | "
          "Python runtime p50 ms | browser / runtime |")
    print("|---|---|---|---|---|---|---|")
    for entry in page:
        records = entry["measured"]["results"]
        python = runtime_p50(args.bundle, entry["precision"], [r["seq_len"] for r in records], args.warmup, args.runs)
        for r in records:
            p50 = r["timed"]["p50_ms"]
            print(f"| tflite:{entry['precision']} | {entry['cold_ms']:.0f} ms | {r['seq_len']} | {p50:.2f} | "
                  f"{r['timed']['p90_ms']:.2f} | {python[r['seq_len']]:.2f} | {p50 / python[r['seq_len']]:.2f}x |")
        if args.results:
            args.results.mkdir(parents=True, exist_ok=True)
            (args.results / f"browser-ner-{entry['precision']}.json").write_text(
                json.dumps(entry["measured"], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
