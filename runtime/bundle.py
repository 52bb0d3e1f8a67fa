"""Reading a converter bundle: manifest checks, file integrity and the choice of model artifact.

The manifest (docs/manifest.md, schema v1) is the contract; nothing here guesses from file names.
Artifacts are read generically from ``artifacts[]``, so recipes added to the converter later are
usable as soon as a backend exists for them.

Default artifact, when the caller names none: the backend first (``auto``: ONNX Runtime when the
bundle has an ONNX artifact and onnxruntime is installed, else LiteRT), then, within it, the
precision that runs fastest on a CPU: ``int8-dynamic``, then any other ``int8-*``, then ``fp16``,
then ``fp32``.  ``precision=`` or ``recipe=`` override it.  Only verified artifacts are chosen.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from .errors import BackendUnavailableError, BundleError

#: highest manifest schema this runtime reads (converter.bundle.SCHEMA_VERSION; a test keeps them equal)
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
TASKS = ("classification", "ner")
#: backends in ``auto`` order, with the Python package each one needs
BACKEND_PACKAGES = {"onnx": ("onnxruntime", "onnxruntime"), "tflite": ("ai_edge_litert", "ai-edge-litert")}
_REBUILD = "convert the model again with this version of pocketbert (python -m converter …)"


def precision_rank(precision: str) -> tuple[int, str]:
    """Lower is preferred by default: int8-dynamic, other int8, fp16, fp32, anything else."""
    if precision == "int8-dynamic":
        return 0, precision
    if precision.startswith("int8"):
        return 1, precision
    order = {"fp16": 2, "fp32": 3}
    return order.get(precision, 4), precision


def backend_installed(name: str) -> bool:
    module = BACKEND_PACKAGES.get(name, (None,))[0]
    return module is not None and importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class Artifact:
    """One model file of the bundle (an ``artifacts[]`` entry)."""

    recipe: str
    backend: str
    precision: str
    file: str
    path: Path
    details: dict
    passed: bool


class Bundle:
    """A bundle directory with a validated manifest.  Open with :meth:`open`."""

    def __init__(self, path: Path, manifest: dict):
        self.path = path
        self.manifest = manifest
        self.task: str = manifest["task"]
        self.problem_type: str = manifest.get("problem_type") or (
            "token_classification" if self.task == "ner" else "single_label_classification")
        self.labels: list[str] = list(manifest["labels"])
        self.max_sequence_length: int = int(manifest["max_sequence_length"])
        self.input_names: list[str] = [i["name"] for i in manifest["inputs"]]
        self.tokenizer_settings: dict = manifest["tokenizer"]
        self.notes: list[str] = list(manifest.get("notes") or [])
        self.artifacts: list[Artifact] = [
            Artifact(recipe=a["recipe"], backend=a["backend"], precision=a["precision"], file=a["file"],
                     path=path / a["file"], details=a.get("details") or {},
                     passed=bool((a.get("verification") or {}).get("passed", False)))
            for a in manifest["artifacts"]]

    @classmethod
    def open(cls, path: str | Path) -> Bundle:
        path = Path(path).expanduser()
        if not path.is_dir():
            raise BundleError(f"bundle {str(path)!r} " + ("is not a directory" if path.exists() else "does not exist"),
                              "give the directory written by `python -m converter … --out DIR`")
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise BundleError(f"{str(path)!r} has no {MANIFEST}, so it is not a PocketBERT bundle",
                              "give the directory written by `python -m converter … --out DIR`")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{manifest_path} is not valid JSON ({exc})", _REBUILD) from exc
        if not isinstance(manifest, dict):
            raise BundleError(f"{manifest_path} does not hold a JSON object", _REBUILD)
        version = manifest.get("schema_version", 0)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise BundleError(f"bundle schema {version} is newer than this runtime reads ({SCHEMA_VERSION})",
                              "upgrade pocketbert (pip install -U pocketbert), or convert with the version you have")
        _validate(manifest, manifest_path)
        return cls(path, manifest)

    # --- integrity -------------------------------------------------------------------------
    def file(self, name: str, *, verify: bool = True) -> Path:
        """Path of a bundle file that must exist and match its ``files`` entry (size; SHA-256 if ``verify``)."""
        path = self.path / name
        if not path.is_file():
            raise BundleError(f"the bundle is missing {name} (listed in its manifest)",
                              f"copy the complete bundle directory again; {name} must sit beside manifest.json")
        entry = (self.manifest.get("files") or {}).get(name)
        if entry is None:
            raise BundleError(f"{name} is not listed in the manifest's files, so it cannot be checked", _REBUILD)
        size = path.stat().st_size
        if size != entry.get("bytes"):
            raise BundleError(f"{name} is corrupt or truncated: {size} bytes, the manifest says {entry.get('bytes')}",
                              "copy the bundle again (an interrupted copy or download leaves short files)")
        if verify and _sha256(path) != entry.get("sha256"):
            raise BundleError(f"{name} is corrupt: its SHA-256 differs from the manifest's",
                              "copy the bundle again; if you changed the file on purpose, convert again")
        return path

    # --- artifact choice -------------------------------------------------------------------
    def select(self, backend: str = "auto", precision: str | None = None, recipe: str | None = None) -> Artifact:
        """The artifact to run; see the module docstring for the default rule."""
        usable = [a for a in self.artifacts if a.passed]
        available = ", ".join(a.recipe for a in usable) or "none"
        if backend not in ("auto", *BACKEND_PACKAGES):
            raise BundleError(f"unknown backend {backend!r}", f"use auto, {', '.join(BACKEND_PACKAGES)}")
        if recipe is not None:
            match = [a for a in usable if a.recipe == recipe]
            if not match:
                raise BundleError(f"the bundle has no verified artifact {recipe!r} (it has: {available})",
                                  "pass one of those recipes, or convert with the options that produce it")
            chosen = match[0]
            if backend != "auto" and chosen.backend != backend or precision and chosen.precision != precision:
                raise BundleError(f"recipe {recipe!r} contradicts backend={backend!r}/precision={precision!r}",
                                  "pass only recipe=, or only backend=/precision=")
            self._require_backend(chosen.backend)
            return chosen
        if backend == "auto":
            names = [b for b in BACKEND_PACKAGES if any(a.backend == b for a in usable)]
            if not names:
                raise BundleError(f"the bundle has no artifact this runtime can run (it has: {available})",
                                  f"convert with --format {' or '.join(BACKEND_PACKAGES)}")
            installed = [b for b in names if backend_installed(b)
                         and (precision is None or any(a.backend == b and a.precision == precision for a in usable))]
            backend = installed[0] if installed else names[0]
        candidates = [a for a in usable if a.backend == backend and (precision is None or a.precision == precision)]
        if not candidates:
            wanted = f"{backend}:{precision}" if precision else f"{backend} artifact"
            raise BundleError(f"the bundle has no verified {wanted} (it has: {available})",
                              "choose one of those with backend=/precision=, or convert with matching "
                              "--format/--opt")
        self._require_backend(backend)
        return min(candidates, key=lambda a: precision_rank(a.precision))

    @staticmethod
    def _require_backend(name: str) -> None:
        if not backend_installed(name):
            module, package = BACKEND_PACKAGES[name]
            raise BackendUnavailableError(f"backend {name!r} needs the Python package {package}, which is not "
                                          "installed", f"pip install {package}, or choose another backend")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _validate(m: dict, where: Path) -> None:
    """The fields the runtime relies on, with their types: a clear error instead of a KeyError later."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise BundleError(f"{where}: {what}", _REBUILD)

    need(m.get("task") in TASKS, f"'task' must be one of {', '.join(TASKS)}, not {m.get('task')!r}")
    labels = m.get("labels")
    need(isinstance(labels, list) and labels and all(isinstance(x, str) for x in labels),
         "'labels' must be a non-empty list of strings")
    need(isinstance(m.get("max_sequence_length"), int) and m["max_sequence_length"] >= 2,
         "'max_sequence_length' must be an integer ≥ 2")
    inputs = m.get("inputs")
    need(isinstance(inputs, list) and inputs and all(isinstance(i, dict) and isinstance(i.get("name"), str)
                                                   for i in inputs), "'inputs' must list the model inputs by name")
    need({i["name"] for i in inputs} <= {"input_ids", "attention_mask", "token_type_ids"},
         f"unknown model inputs {[i['name'] for i in inputs]}")
    tokenizer = m.get("tokenizer")
    need(isinstance(tokenizer, dict) and isinstance(tokenizer.get("tokenizer_file"), str),
         "'tokenizer.tokenizer_file' is missing")
    need(isinstance(m.get("artifacts"), list) and all(
        isinstance(a, dict) and all(isinstance(a.get(k), str) for k in ("recipe", "backend", "precision", "file"))
        for a in m["artifacts"]), "'artifacts' entries need recipe, backend, precision and file")
    need(isinstance(m.get("files", {}), dict), "'files' must map file names to their size and SHA-256")
