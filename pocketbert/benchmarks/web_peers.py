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
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import schema

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "web" / "bench"
TOOLS = REPO / "web_demo" / "tools"
DEV_SETS = {"classification": "glue:sst2", "ner": "conll2003"}
# transformers.js's dtype for each of our ONNX precisions, and the file name it loads for it
TRANSFORMERS_DTYPES = {"fp32": ("fp32", "model.onnx"), "int8-dynamic": ("q8", "model_quantized.onnx")}


class WebPeersError(RuntimeError):
    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


@dataclass
class Settings:
    texts: int = 200
    warmup: int = 5
    runs: int = 30
    threads: tuple[int, ...] = (1, 2)
    seq_lens: tuple[int, ...] = (32, 128)
    data_dir: str | None = None
    web_src: Path | None = None  # the PocketBERT web sources the page imports (default: web/src)

    @classmethod
    def quick(cls, **kw) -> Settings:
        return cls(texts=8, warmup=1, runs=3, **kw)


@dataclass
class Cell:
    """One page: a runtime on one model file at one thread count."""
    id: str
    runtime: str  # ours | transformers | mediapipe
    bundle: Path
    name: str
    task: str
    recipe: str  # the bundle's artifact the page runs (transformers.js: the ONNX file it was laid out from)
    precision: str
    threads: int
    page: dict = field(default_factory=dict)
    size_bytes: int = 0


def _manifest(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    if not path.is_file():
        raise WebPeersError(f"{bundle} has no manifest.json", "pass bundle folders written by pocketbert-convert")
    return json.loads(path.read_text(encoding="utf-8"))


def bundle_name(bundle: Path, manifest: dict) -> str:
    return bundle.name or (manifest.get("source") or {}).get("builtin") or "bundle"


def plan(bundles: list[Path], settings: Settings) -> list[Cell]:
    """Every page to open: each runtime on every file of each bundle it can run, at each thread count it offers."""
    cells = []
    for bundle in bundles:
        manifest = _manifest(bundle)
        name, task = bundle_name(bundle, manifest), manifest["task"]
        for a in manifest["artifacts"]:
            if not (a.get("verification") or {}).get("passed"):
                continue
            size = (manifest["files"].get(a["file"]) or {}).get("bytes", 0)
            common = {"bundle": bundle, "name": name, "task": task, "recipe": a["recipe"],
                      "precision": a["precision"], "size_bytes": size}
            if a["backend"] == "tflite" and a["precision"] != "int8-static":
                # our page code runs one thread until the package offers more: the page reports it as skipped
                cells += [Cell(f"{name}/ours/{a['precision']}/t{t}", "ours", threads=t, **common)
                          for t in settings.threads]
                blockers = ((a.get("details") or {}).get("metadata") or {}).get("mediapipe_blockers")
                if task == "classification" and blockers == []:
                    cells.append(Cell(f"{name}/mediapipe/{a['precision']}/t1", "mediapipe", threads=1, **common))
            elif a["backend"] == "onnx" and a["precision"] in TRANSFORMERS_DTYPES:
                cells += [Cell(f"{name}/transformers/{TRANSFORMERS_DTYPES[a['precision']][0]}/t{t}", "transformers",
                               threads=t, **common) for t in settings.threads]
    return cells


# --- the site: pages, runtimes' WebAssembly, models ------------------------------------------------------------
def _place(source: Path, target: Path) -> None:
    if target.exists():  # another cell's page uses the same file
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # models are large: a link costs nothing
    except OSError:
        shutil.copy2(source, target)


def transformers_config(manifest: dict) -> dict:
    """A config.json transformers.js reads: the model type picks its class, id2label names the outputs."""
    labels = manifest["labels"]
    return {"model_type": manifest.get("model_type", manifest.get("family", "bert")),
            "architectures": [manifest.get("architecture")], "problem_type": manifest.get("problem_type"),
            "id2label": {str(i): label for i, label in enumerate(labels)},
            "label2id": {label: i for i, label in enumerate(labels)}, "num_labels": len(labels)}


def lay_out(cells: list[Cell], site: Path) -> None:
    """Each cell's model under the site: our bundle's files in bundles/<name>/, transformers.js's folder in
    models/<name>/, MediaPipe's single file in bundles/<name>/."""
    for cell in cells:
        manifest = _manifest(cell.bundle)
        artifact = next(a for a in manifest["artifacts"] if a["recipe"] == cell.recipe)
        common = {"task": cell.task, "threads": cell.threads}
        if cell.runtime == "transformers":
            dtype, file_name = TRANSFORMERS_DTYPES[cell.precision]
            folder = site / "models" / cell.name
            _place(cell.bundle / artifact["file"], folder / "onnx" / file_name)
            tokenizer = manifest["tokenizer"]
            for name in (tokenizer.get("tokenizer_file", "tokenizer.json"), "tokenizer_config.json"):
                _place(cell.bundle / name, folder / name)
            (folder / "config.json").write_text(json.dumps(transformers_config(manifest), indent=1), encoding="utf-8")
            cell.page = {**common, "model_name": cell.name, "precision": dtype}
            continue
        folder = site / "bundles" / cell.name
        if cell.runtime == "ours":
            tokenizer = manifest["tokenizer"]
            for name in ("manifest.json", "labels.txt", tokenizer.get("vocab_file", "vocab.txt"), artifact["file"]):
                _place(cell.bundle / name, folder / name)
            cell.page = {**common, "model_url": f"/bundles/{cell.name}/", "precision": cell.precision}
        else:
            _place(cell.bundle / artifact["file"], folder / artifact["file"])
            cell.page = {**common, "model_url": f"/bundles/{cell.name}/{artifact['file']}"}


def build_site(site: Path, web_src: Path | None = None) -> None:
    if not (BENCH / "node_modules").is_dir():
        raise WebPeersError(f"{BENCH}/node_modules is missing: the pages need transformers.js, MediaPipe and LiteRT.js",
                            f"run: cd {BENCH} && npm ci --ignore-scripts")
    extra = ["--web-src", str(Path(web_src).resolve())] if web_src else []
    done = subprocess.run(["node", str(BENCH / "build.mjs"), str(site), *extra], capture_output=True, text=True)
    if done.returncode:
        raise WebPeersError(f"the benchmark pages could not be built: {done.stderr.strip()[:2000]}",
                            "check the web sources build (cd web && npm test), or pass --web-src DIR")


def serve(root: Path):
    """A local server with cross-origin isolation (COOP/COEP), which threaded WebAssembly needs."""
    class Isolated(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                          ".wasm": "application/wasm", ".js": "text/javascript"}

        def end_headers(self):
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Isolated, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --- texts and the Python runtime's answers --------------------------------------------------------------------
def dev_texts(task: str, count: int, data_dir: str | None) -> list[str]:
    """The dev set's first ``count`` texts (SST-2 sentences; CoNLL-2003 sentences, words joined by spaces)."""
    from pocketbert.converter.data import load_task

    data = load_task(DEV_SETS[task], "dev", data_dir)
    return [" ".join(t) if isinstance(t, list) else t for t in data.texts[:count]]


def text_of_length(encoder, words: list[str], length: int) -> str:
    """A text the bundle's tokenizer turns into exactly ``length`` tokens (specials included)."""
    text, used = "", 0
    while used < len(words):
        longer = f"{text} {words[used]}".strip()
        if encoder.length(longer) > length:
            break
        text, used = longer, used + 1
    while encoder.length(text) < length:  # "a" is one token in every uncased or cased BERT vocabulary
        text = f"{text} a".strip()
    return text


def python_answers(cell: Cell, texts: list[str]) -> list:
    """What the Python runtime answers on the same file, in the form the page gives it."""
    from pocketbert import runtime
    from pocketbert.runtime import batching

    pipe = runtime.load(cell.bundle, cell.recipe.split(":")[0], recipe=cell.recipe, threads=1)
    if cell.task == "classification":
        logits = pipe.logits(texts)
        return [pipe.labels[int(i)] for i in np.argmax(logits, axis=-1)]
    if cell.runtime != "transformers":
        return [[[e["entity_group"], e["start"], e["end"]] for e in pipe(text, aggregation="simple")]
                for text in texts]
    out = []  # transformers.js's form: [token index, label] of every non-O, non-special token
    for text in texts:
        (enc,) = pipe.encoder.encode([(text, None)])
        feeds = batching.pad([(enc.ids, enc.type_ids)], pipe.bundle.input_names, pipe.encoder.pad_id)
        best = np.argmax(pipe.backend.run(feeds)[0], axis=-1)
        out.append([[i, pipe.labels[int(b)]] for i, b in enumerate(best)
                    if not enc.special_tokens_mask[i] and pipe.labels[int(b)] != "O"])
    return out


def unk_positions(cell: Cell, texts: list[str]) -> list[set[int]]:
    """Token positions transformers.js leaves out of its NER answer ([UNK] decodes to nothing there)."""
    from pocketbert import runtime

    pipe = runtime.load(cell.bundle, "onnx", recipe=cell.recipe, threads=1)
    unk = pipe.encoder.unk_id
    return [{i for i, t in enumerate(pipe.encoder.encode([(text, None)])[0].ids) if t == unk} for text in texts]


def agreement(cell: Cell, page_answers: list, python: list, texts: list[str]) -> dict:
    if cell.runtime == "transformers" and cell.task == "ner":
        unks = unk_positions(cell, texts)
        page_answers = [[t for t in a if t[0] not in u] for a, u in zip(page_answers, unks)]
        python = [[t for t in a if t[0] not in u] for a, u in zip(python, unks)]
    same = [json.dumps(a) == json.dumps(b) for a, b in zip(page_answers, python)]
    differ = [i for i, s in enumerate(same) if not s]
    what = {"classification": "top label", "ner": "entities (label, code-point span)"}[cell.task]
    if cell.runtime == "transformers" and cell.task == "ner":
        what = "every token's label (transformers.js gives no spans)"
    # NER: how many texts had something to agree on (an entity, or a non-O token), so agreement is not vacuous
    found = sum(1 for a in python if a) if cell.task == "ner" else len(python)
    return {"texts": len(same), "agree": sum(same), "fraction": sum(same) / len(same) if same else None,
            "compared": what, "with_answers": found, "first_differences": differ[:5]}


# --- the run ---------------------------------------------------------------------------------------------------
def measure(bundles: list[Path], settings: Settings, work: Path, log=print) -> dict:
    """Every cell measured in one browser session; the results file (not yet written)."""
    from pocketbert.runtime import machine

    cells = plan(bundles, settings)
    if not cells:
        raise WebPeersError("none of the bundles has a file the pages can run",
                            "pass bundles with TFLite or ONNX files, e.g. pocketbert-convert sst2-demo --out DIR")
    chromium = _chromium(log)
    site = work / "site"
    if site.exists():
        shutil.rmtree(site)
    build_site(site, settings.web_src)
    lay_out(cells, site)
    texts, timing = _texts(cells, settings)
    server = serve(site)
    try:
        spec = {"base": f"http://127.0.0.1:{server.server_address[1]}/", "chromium": chromium,
                "cells": [_cell_spec(c, texts, timing, settings) for c in cells]}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        log(f"{len(cells)} pages in Chromium ({settings.texts} texts, {settings.warmup}+{settings.runs} runs)")
        started = time.monotonic()
        subprocess.run(["node", str(BENCH / "driver.mjs"), str(work / "spec.json"), str(work / "out.json")],
                       check=True, cwd=BENCH)
        log(f"browser done in {time.monotonic() - started:.0f} s")
        pages = {p["id"]: p for p in json.loads((work / "out.json").read_text(encoding="utf-8"))}
    finally:
        server.shutdown()
    data = schema.new_file("web-peers", fast=settings.texts < 200 or settings.runs < 30,
                           machine=machine.describe(), device=_device(pages),
                           settings={"texts": settings.texts, "warmup": settings.warmup, "runs": settings.runs,
                                     "threads": list(settings.threads), "seq_lens": list(settings.seq_lens),
                                     "bundles": [str(b) for b in bundles], "versions": _versions()})
    python_cache: dict = {}
    for cell in cells:
        data["results"] += records(cell, pages[cell.id], texts[cell.task], python_cache, settings)
    return data


def _chromium(log) -> str:
    import sys

    sys.path.insert(0, str(TOOLS))
    try:
        from ensure_chromium import ChromiumUnavailable, ensure
    finally:
        sys.path.remove(str(TOOLS))
    try:
        return ensure(log=log)
    except ChromiumUnavailable as err:
        raise WebPeersError(str(err), "apt-get install -y chromium (as root)") from None


def _texts(cells: list[Cell], settings: Settings) -> tuple[dict, dict]:
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


def _cell_spec(cell: Cell, texts: dict, timing: dict, settings: Settings) -> dict:
    # agreement at one thread only: more threads give the same answers, so they are only timed
    return {"id": cell.id, "runtime": cell.runtime, "threads": cell.threads,
            "page": {**cell.page, "first_text": texts[cell.task][0]},
            "texts": texts[cell.task] if cell.threads == 1 else [], "timing": timing[cell.name],
            "warmup": settings.warmup, "runs": settings.runs}


RUNTIME_LABELS = {"ours": "pocketbert", "transformers": "transformers.js", "mediapipe": "mediapipe"}


def records(cell: Cell, page: dict, texts: list[str], python_cache: dict, settings: Settings) -> list[dict]:
    """One schema record per timed length; a page that failed gives skipped records saying why."""
    base = {"model": cell.name, "model_label": f"{cell.name} ({cell.task})", "random_weights": False,
            "bundle": str(cell.bundle), "variant": "bundle" if cell.runtime == "ours" else "peer",
            "runner": f"{RUNTIME_LABELS[cell.runtime]} {cell.page.get('precision') if cell.runtime == 'transformers' else cell.recipe}",
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
