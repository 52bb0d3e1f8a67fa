"""What ``web-peers`` opens: each runtime on every file of each bundle it can run, at each thread count."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

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
class PeerSettings:
    texts: int = 200
    warmup: int = 5
    runs: int = 30
    threads: tuple[int, ...] = (1, 2)
    seq_lens: tuple[int, ...] = (32, 128)
    data_dir: str | None = None
    web_src: Path | None = None  # the PocketBERT web sources the page imports (default: web/src)

    @classmethod
    def quick(cls, **kw) -> PeerSettings:
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


def manifest_of(bundle: Path) -> dict:
    path = bundle / "manifest.json"
    if not path.is_file():
        raise WebPeersError(f"{bundle} has no manifest.json", "pass bundle folders written by pocketbert-convert")
    return json.loads(path.read_text(encoding="utf-8"))


def bundle_name(bundle: Path, manifest: dict) -> str:
    return bundle.name or (manifest.get("source") or {}).get("builtin") or "bundle"


def plan(bundles: list[Path], settings: PeerSettings) -> list[Cell]:
    """Every page to open: each runtime on every file of each bundle it can run, at each thread count it offers."""
    cells = []
    for bundle in bundles:
        manifest = manifest_of(bundle)
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
