"""The site ``web-peers`` serves: the pages (web/bench, built with node), every runtime's WebAssembly and the
models, each laid out as its runtime loads it; served locally with cross-origin isolation."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

from .web_peers_plan import BENCH, TRANSFORMERS_DTYPES, Cell, WebPeersError, manifest_of


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
        manifest = manifest_of(cell.bundle)
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
