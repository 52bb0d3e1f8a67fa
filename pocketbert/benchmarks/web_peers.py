"""``pocketbert-bench web-peers``: our bundles beside transformers.js and MediaPipe Tasks in one Chromium run.

For each bundle (SST-2 or CoNLL-2003 NER), in headless Chromium, every page cold (fresh context, no cache):

* ``pocketbert``: the bundle's TFLite files through our web pipeline (LiteRT.js; web/bench/src/pocketbert.js);
* ``transformers.js``: the bundle's ``onnx:fp32`` and ``onnx:int8-dynamic`` files laid out as a transformers.js
  model folder (``config.json``, ``tokenizer.json``, ``tokenizer_config.json``, ``onnx/model.onnx`` and, for
  ``dtype: 'q8'``, ``onnx/model_quantized.onnx``), loaded locally (``env.allowRemoteModels = false``);
* ``mediapipe``: MediaPipe Tasks' ``TextClassifier`` on every classification TFLite file its checks pass
  (one bucket, float logits: the manifest's ``mediapipe_blockers`` is empty).

Per page: bytes downloaded (model, WebAssembly, JavaScript; the network log, uncompressed as served), cold
load to first result (navigation start to the first answer), p50/p90 of whole calls (tokenization, model,
decoding) on texts of exactly 32 and 128 tokens, and, at one thread, agreement with the Python runtime on
the same file: the dev set's first texts, the share answered identically (top label; NER entities and
spans; for transformers.js, which gives no offsets, each token's label).  Threads above one need cross-origin
isolation: the pages are served with COOP/COEP headers.

The pages and their driver live in web/bench/ (node, its own package.json); Chromium is Debian's
(web_demo/tools/ensure_chromium.py).  Results are one file in the benchmarks schema (command ``web-peers``).
This module runs it; web_peers_plan.py says which pages, web_peers_site.py lays out and serves them,
web_peers_agreement.py holds the answers to the Python runtime's, web_peers_report.py draws the table.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import schema
from .web_peers_agreement import agreement, dev_texts, python_answers, text_of_length
from .web_peers_plan import BENCH, TOOLS, Cell, PeerSettings, WebPeersError, plan
from .web_peers_site import build_site, lay_out, serve

__all__ = ["PeerSettings", "WebPeersError", "measure"]


def measure(bundles: list[Path], settings: PeerSettings, work: Path, log=print) -> dict:
    """Every cell measured in one browser session; the results file (not yet written)."""
    from pocketbert.runtime import machine

    cells = plan(bundles, settings)
    if not cells:
        raise WebPeersError("none of the bundles has a file the pages can run",
                            "pass bundles with TFLite or ONNX files, e.g. pocketbert-convert sst2-demo --out DIR")
    chromium = _chromium(log)
    texts, timing = _texts(cells, settings)
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="web-peers-") as tmp:  # its own: runs may overlap
        site = Path(tmp) / "site"
        build_site(site, settings.web_src)
        lay_out(cells, site)
        spec = {"chromium": chromium, "cells": [_cell_spec(c, texts, timing, settings) for c in cells]}
        pages = _drive(spec, site=site, tmp=Path(tmp), settings=settings, log=log)
    data = schema.new_file("web-peers", fast=settings.texts < 200 or settings.runs < 30,
                           machine=machine.describe(), device=_device(pages),
                           settings={"texts": settings.texts, "warmup": settings.warmup, "runs": settings.runs,
                                     "threads": list(settings.threads), "seq_lens": list(settings.seq_lens),
                                     "bundles": [str(b) for b in bundles], "versions": _versions()})
    python_cache: dict = {}
    for cell in cells:
        data["results"] += records(cell, pages[cell.id], texts=texts[cell.task], python_cache=python_cache,
                                    settings=settings)
    return data


def _drive(spec: dict, *, site: Path, tmp: Path, settings: PeerSettings, log) -> dict:
    """Every cell's page in one Chromium session, the site served meanwhile: {cell id: what the page measured}."""
    server = serve(site)
    try:
        spec = {**spec, "base": f"http://127.0.0.1:{server.server_address[1]}/"}
        (tmp / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        log(f"{len(spec['cells'])} pages in Chromium ({settings.texts} texts, {settings.warmup}+{settings.runs} runs)")
        started = time.monotonic()
        done = subprocess.run(["node", str(BENCH / "driver.mjs"), str(tmp / "spec.json"), str(tmp / "out.json")],
                              cwd=BENCH, stdout=subprocess.DEVNULL)
        if done.returncode:
            raise WebPeersError(f"the browser driver stopped (exit {done.returncode}; its messages are above)",
                                f"check that Chromium starts: {spec['chromium']} --headless --no-sandbox "
                                "--dump-dom about:blank")
        log(f"browser done in {time.monotonic() - started:.0f} s")
        return {p["id"]: p for p in json.loads((tmp / "out.json").read_text(encoding="utf-8"))}
    finally:
        server.shutdown()


def _chromium(log) -> str:
    sys.path.insert(0, str(TOOLS))
    try:
        from ensure_chromium import ChromiumUnavailable, ensure
    finally:
        sys.path.remove(str(TOOLS))
    try:
        return ensure(log=log)
    except ChromiumUnavailable as err:
        raise WebPeersError(str(err), "apt-get install -y chromium (as root)") from None


def _texts(cells: list[Cell], settings: PeerSettings) -> tuple[dict, dict]:
    """Dev texts per task, and per bundle the texts of exactly each timed length (its own tokenizer)."""
    from pocketbert import runtime

    texts = {task: dev_texts(task, settings.texts, settings.data_dir) for task in {c.task for c in cells}}
    timing = {}
    for cell in cells:
        if cell.name not in timing:
            encoder = runtime.load(cell.bundle, "auto", measure=False, verify=False).encoder
            words = " ".join(dev_texts(cell.task, 400, settings.data_dir)).split()
            timing[cell.name] = {n: text_of_length(encoder, words, n) for n in settings.seq_lens}
    return texts, timing


def _cell_spec(cell: Cell, texts: dict, timing: dict, settings: PeerSettings) -> dict:
    # agreement at one thread only: more threads give the same answers, so they are only timed
    return {"id": cell.id, "runtime": cell.runtime, "threads": cell.threads,
            "page": {**cell.page, "first_text": texts[cell.task][0]},
            "texts": texts[cell.task] if cell.threads == 1 else [], "timing": timing[cell.name],
            "warmup": settings.warmup, "runs": settings.runs}


RUNTIME_LABELS = {"ours": "pocketbert", "transformers": "transformers.js", "mediapipe": "mediapipe"}


def records(cell: Cell, page: dict, *, texts: list[str], python_cache: dict, settings: PeerSettings) -> list[dict]:
    """One schema record per timed length; a page that failed gives skipped records saying why."""
    file = cell.page.get("precision") if cell.runtime == "transformers" else cell.recipe  # transformers.js: its dtype
    base = {"model": cell.name, "model_label": f"{cell.name} ({cell.task})", "random_weights": False,
            "bundle": str(cell.bundle), "variant": "bundle" if cell.runtime == "ours" else "peer",
            "runner": f"{RUNTIME_LABELS[cell.runtime]} {file}",
            "web_runtime": RUNTIME_LABELS[cell.runtime], "task": cell.task, "recipe": cell.recipe,
            "backend": cell.recipe.split(":")[0], "precision": cell.precision, "threads": cell.threads, "batch": 1,
            "where": "browser", "peak_rss_mb": None, "size_bytes": cell.size_bytes, "macs": None, "floor": None,
            "notes": ["whole calls in a web page (tokenization, model, decoding), headless Chromium"]}
    if page.get("error"):
        return [{**base, "seq_len": n, "init_ms": None, "first_ms": None, "warmup": None, "timed": None,
                 "skipped": page["error"]} for n in settings.seq_lens]
    base |= {"bytes_downloaded": page["bytes"], "requests": page["requests"], "page_info": page.get("info"),
             "cross_origin_isolated": page.get("isolated"), "init_ms": page["cold_ms"], "first_ms": page["cold_ms"]}
    if page.get("answers"):
        key = (cell.runtime == "transformers", str(cell.bundle), cell.recipe)
        if key not in python_cache:
            python_cache[key] = python_answers(cell, texts)
        base["agreement"] = agreement(cell, page["answers"], python_cache[key], texts)
    return [{**base, "seq_len": int(n), "warmup": {"runs": settings.warmup, "mean_ms": None},
             "timed": schema.summarize(times), "skipped": None} for n, times in page["times"].items()]


def _device(pages: dict) -> dict:
    page = next((p for p in pages.values() if p.get("user_agent")), {})
    return {"kind": "browser", "user_agent": page.get("user_agent"),
            "hardware_concurrency": page.get("hardware_concurrency")}


def _versions() -> dict:
    out = {}
    for name in ("@huggingface/transformers", "@mediapipe/tasks-text", "@litertjs/core", "onnxruntime-web"):
        with contextlib.suppress(OSError, ValueError):
            out[name] = json.loads((BENCH / "node_modules" / name / "package.json").read_text())["version"]
    return out
