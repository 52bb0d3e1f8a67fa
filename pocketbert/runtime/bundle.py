"""Reading a converter bundle: manifest checks, file integrity and the choice of model artifact.

The manifest (docs/manifest.md, schema v1) is the contract; nothing here guesses from file names.
Artifacts are read generically from ``artifacts[]``, so recipes added to the converter later are
usable as soon as a backend exists for them.

Default artifact, when the caller names none: the backend first (``auto``: ONNX Runtime when the
bundle has an ONNX artifact and onnxruntime is installed, else LiteRT), then, within it, the
precision that runs fastest on a CPU: ``int8-dynamic``, then any other ``int8-*``, then ``int4-*`` (the
phone-sized file), then ``fp16``, then ``fp32``.  ``precision=`` or ``recipe=`` override it.  Only verified artifacts are chosen.

A bundle is untrusted input (it is downloaded and copied between machines): every file is read through
:meth:`Bundle.file` or the manifest check of :meth:`Bundle.open`, so it must lie inside the bundle
directory (``bundle_paths``), be listed in the manifest's ``files`` and match its size and SHA-256.
The manifest itself is covered by no checksum: ``expected_sha256=`` pins it, and through its ``files``
every file read (README, "What a bundle guarantees").
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from . import backends
from .backends import BACKENDS
from .bundle_paths import resolve_inside
from .consistency import check_consistency
from .contract import (DAMAGED, MANIFEST, REBUILD, SHA256_HEX, bundle_input_length, parse_manifest, sha256, shown,
                       validate_manifest)
from .errors import BackendUnavailableError, BundleError

#: a manifest is a few kilobytes; reading a larger file whole would let a hostile bundle exhaust memory
MAX_MANIFEST_BYTES = 16 << 20


def precision_rank(precision: str) -> tuple[int, str]:
    """Lower is preferred by default: int8-dynamic, other int8, int4 (the phone-sized file, a little less
    accurate), fp16, fp32, anything else."""
    if precision == "int8-dynamic":
        return 0, precision
    if precision.startswith("int8"):
        return 1, precision
    if precision.startswith("int4"):
        return 2, precision
    order = {"fp16": 3, "fp32": 4}
    return order.get(precision, 5), precision


def preferred(artifacts: list[Artifact]) -> Artifact:
    """The default among artifacts of one backend: the lowest :func:`precision_rank` (int8-dynamic first)."""
    return min(artifacts, key=lambda a: precision_rank(a.precision))


def backend_installed(name: str) -> bool:
    """A runtime backend of that name exists and its package is installed (tests replace this)."""
    return backends.installed(name)


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
        #: the directory's real path: files must resolve inside it (the bundle directory may itself be a link)
        self.root = Path(path).resolve()
        self.manifest = manifest
        self.task: str = manifest["task"]
        self.problem_type: str = manifest.get("problem_type") or (
            "token_classification" if self.task == "ner" else "single_label_classification")
        self.labels: list[str] = list(manifest["labels"])
        self.max_sequence_length: int = int(manifest["max_sequence_length"])
        #: the row length every artifact and every reader uses (contract.bundle_input_length)
        self.input_length: int = bundle_input_length(manifest)
        self.input_names: list[str] = [i["name"] for i in manifest["inputs"]]
        self.tokenizer_settings: dict = manifest["tokenizer"]
        self.notes: list[str] = list(manifest.get("notes") or [])
        self.artifacts: list[Artifact] = [
            Artifact(recipe=a["recipe"], backend=a["backend"], precision=a["precision"], file=a["file"],
                     path=self.resolve(a["file"], f"artifacts[{i}].file"), details=a.get("details") or {},
                     passed=bool((a.get("verification") or {}).get("passed", False)))
            for i, a in enumerate(manifest["artifacts"])]

    @classmethod
    def open(cls, path: str | os.PathLike, *, expected_sha256: str | None = None) -> Bundle:
        """Open and check the bundle directory ``path``.  ``expected_sha256``: refuse the bundle unless its
        manifest.json has this SHA-256 (a pin; see :func:`runtime.load`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError("the bundle directory must be a path (str or os.PathLike), not "
                            f"{'None' if path is None else type(path).__name__}")
        pin = parse_pin(expected_sha256)
        path = Path(path).expanduser()
        if not path.is_dir():
            raise BundleError(f"bundle {str(path)!r} " + ("is not a directory" if path.exists() else "does not exist"),
                              "give the directory written by `pocketbert-convert … --out DIR`")
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise BundleError(f"{str(path)!r} has no {MANIFEST}, so it is not a PocketBERT bundle",
                              "give the directory written by `pocketbert-convert … --out DIR`")
        root = path.resolve()
        real_manifest = resolve_inside(root, MANIFEST, "the manifest")
        if real_manifest.stat().st_size > MAX_MANIFEST_BYTES:
            raise BundleError(f"{manifest_path} is {real_manifest.stat().st_size} bytes; a bundle's manifest is a few "
                              f"kilobytes (at most {MAX_MANIFEST_BYTES})", DAMAGED)
        data = real_manifest.read_bytes()  # the pin and the parser see the same bytes
        if pin is not None:
            actual = hashlib.sha256(data).hexdigest()
            if actual != pin:
                raise BundleError(f"the bundle {str(path)!r} is not the one pinned: its manifest.json has SHA-256 "
                                  f"{actual}, the pin is {pin}",
                                  "use the bundle the pin was made for (copy it again from its source); if it was "
                                  "rebuilt on purpose, pin the SHA-256 the converter printed for the new one")
        manifest = parse_manifest(data, manifest_path)
        validate_manifest(manifest, manifest_path)
        for entry, name in _named_files(manifest):  # every name, used by this load or not
            resolve_inside(root, name, entry)
        bundle = cls(path, manifest)
        check_consistency(manifest, bundle.listed_text, manifest_path)
        return bundle

    def listed_text(self, name: str) -> str | None:
        """The text of bundle file ``name``, checked against its listed size and SHA-256; None when the bundle
        does not hold it (not listed, or absent: what is missing is reported by whoever needs it)."""
        if name not in (self.manifest.get("files") or {}) or not self.resolve(name, "files key").is_file():
            return None
        try:
            return self.file(name, entry="files key").read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise BundleError(f"{name} is not UTF-8 text ({exc})", DAMAGED) from exc

    def resolve(self, name: str, entry: str = "file") -> Path:
        """Real path of bundle file ``name``; a BundleError naming ``entry`` if it leads outside the bundle."""
        return resolve_inside(self.root, name, entry)

    # --- integrity -------------------------------------------------------------------------
    def file(self, name: str, *, verify: bool = True, entry: str = "file") -> Path:
        """Real path of a bundle file to read: inside the bundle, listed in ``files``, existing with the listed
        size (and SHA-256 if ``verify``).  Every bundle file the runtime reads passes here first."""
        path = self.resolve(name, entry)
        listing = (self.manifest.get("files") or {}).get(name)
        if listing is None:
            raise BundleError(f"{name} is not listed in the manifest's files, so it cannot be checked", REBUILD)
        if not path.is_file():
            raise BundleError(f"the bundle is missing {name} (listed in its manifest)",
                              f"copy the complete bundle directory again; {name} must sit beside manifest.json")
        size = path.stat().st_size
        if size != listing.get("bytes"):
            raise BundleError(f"{name} is corrupt or truncated: {size} bytes, the manifest says {listing.get('bytes')}",
                              "copy the bundle again (an interrupted copy or download leaves short files)")
        if verify and sha256(path) != listing.get("sha256"):
            raise BundleError(f"{name} is corrupt: its SHA-256 differs from the manifest's",
                              "copy the bundle again; if you changed the file on purpose, convert again")
        return path

    # --- artifact choice -------------------------------------------------------------------
    def select(self, backend: str = "auto", precision: str | None = None, recipe: str | None = None) -> Artifact:
        """The artifact to run; see the module docstring for the default rule."""
        usable = [a for a in self.artifacts if a.passed]
        available = ", ".join(a.recipe for a in usable) or "none"
        if backend not in ("auto", *BACKENDS.names()):
            raise BundleError(f"unknown backend {backend!r}", f"use auto, {', '.join(BACKENDS.names())}")
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
            names = [b for b in BACKENDS.names() if any(a.backend == b for a in usable)]
            if not names:
                raise BundleError(f"the bundle has no artifact this runtime can run (it has: {available})",
                                  f"convert with --format {' or '.join(BACKENDS.names())}")
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
        return preferred(candidates)

    @staticmethod
    def _require_backend(name: str) -> None:
        if not backend_installed(name):
            package = BACKENDS[name].pip_package
            raise BackendUnavailableError(f"backend {name!r} needs the Python package {package}, which is not "
                                          "installed", f"pip install {package}, or choose another backend")


def parse_pin(expected: object) -> str | None:
    """``expected_sha256`` as 64 lower-case hex digits (None: no pin).  Misuse is a TypeError/ValueError."""
    if expected is None:
        return None
    if not isinstance(expected, str):
        raise TypeError(f"expected_sha256 must be a str of 64 hexadecimal digits, not {type(expected).__name__}")
    pin = expected.strip().lower()
    if not SHA256_HEX.fullmatch(pin):
        raise ValueError("expected_sha256 must be 64 hexadecimal digits (the SHA-256 of the bundle's manifest.json), "
                         f"not {shown(expected)}")
    return pin


def _named_files(m: dict):
    """(manifest field, file name) of every path the manifest names: each must stay inside the bundle."""
    for i, a in enumerate(m["artifacts"]):
        yield f"artifacts[{i}].file", a["file"]
    for key in ("tokenizer_file", "vocab_file"):
        if key in m["tokenizer"]:
            yield f"tokenizer.{key}", m["tokenizer"][key]
    for name in m.get("files") or {}:
        yield "files key", name


def read_manifest(directory: str | os.PathLike) -> dict:
    """A bundle's manifest as the runtime reads it: paths, fields and schema version checked."""
    return Bundle.open(directory).manifest
