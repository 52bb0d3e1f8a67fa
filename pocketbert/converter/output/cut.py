"""``pocketbert-convert cut``: a new bundle holding only what one target runs.

A converted bundle holds every recipe built (about 290 MB for the SST-2 demo); a phone app needs one
TFLite file, the web page one TFLite file, a desktop the ONNX files.  The cut copies the source's files
that the target reads, checked against the source manifest, into a new bundle whose manifest lists only
them (``contract.subset_manifest``), through the converter's staging directory.  The source is checked as
the runtime checks it (``Bundle.open``: the manifest against its own files, pin or no pin; the kept model
files opened, and the labels and vocabulary a TFLite file packs compared), so a bundle the runtime would refuse
is never cut into one with a fresh pin.  It reads the source, never writes it, and needs no torch.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from pocketbert.runtime.backends import installed as backend_installed
from pocketbert.runtime.backends import open_backend
from pocketbert.runtime.bundle import Artifact, Bundle, preferred
from pocketbert.runtime.consistency import check_model_file, check_packed_files
from pocketbert.runtime.contract import LABELS_FILE, MANIFEST, VOCAB_FILE, sha256, subset_manifest, write_manifest
from pocketbert.runtime.errors import BundleError, ModelError

from .. import __version__
from ..errors import ConverterInputError
from .staging import Staging, refuse_overlap


@dataclass(frozen=True)
class Target:
    backend: str
    single: bool  # one artifact, the one its reader would choose; else every verified one
    reads_vocabulary: bool  # vocab.txt and labels.txt: the Android core and the page tokenize from them
    cannot_run: tuple[str, ...] = ()  # precisions its reader refuses
    reader: str = ""


TARGETS = {
    "phone": Target("tflite", True, True, reader="the Android app (android_demo/copy_bundle.sh)"),
    # LiteRT.js exposes no output scale and zero point, so the page cannot dequantise int8 logits
    "web": Target("tflite", True, True, ("int8-static",), reader="the pocketbert npm package (web/src/bundle.js)"),
    "desktop": Target("onnx", False, False, reader="the Python runtime with ONNX Runtime"),
}


@dataclass
class CutResult:
    path: Path
    kept: list[Artifact]
    dropped: list[str]  # recipes
    files: dict[str, int]  # kept file -> bytes, manifest.json included
    bytes_before: int
    bytes_after: int
    pin: str  # SHA-256 of the new manifest.json


def cut(source: Path, target: str, out: Path, recipe: str | None = None, overwrite: bool = False) -> CutResult:
    """Write the bundle ``out`` holding what ``target`` runs of the bundle ``source`` (or ``recipe``)."""
    if target not in TARGETS:
        raise ConverterInputError(f"unknown target {target!r}", f"choose one of {', '.join(TARGETS)}")
    bundle = _open(source)
    refuse_overlap(bundle.root, Path(out), "source bundle")
    kept = choose(bundle, target, recipe)
    names = files_for(bundle, TARGETS[target], kept)
    staging = Staging(Path(out), overwrite)  # refuses an --out it may not replace before any hashing
    listed = _verify_source(bundle, names)
    _check_models(bundle, kept)
    record = {"target": target, "from_sha256": sha256(bundle.resolve(MANIFEST)),
              "dropped": [a.recipe for a in bundle.artifacts if a not in kept], "pocketbert_version": __version__}
    manifest = subset_manifest(bundle.manifest, [a.recipe for a in kept], names, record)
    with staging:
        staging.reserve(sum(listed[n] for n in names), "the kept files")
        for name in names:
            shutil.copyfile(bundle.resolve(name), staging.path / name)  # a copy: the source's modes stay its own
        written = write_manifest(staging.path, manifest)
        if _read_files(written) != manifest["files"]:
            raise ConverterInputError(f"a file of {str(bundle.path)!r} changed while it was being copied",
                                      "cut again once nothing is writing to the source bundle")
        path = staging.commit()
    sizes = {name: listed[name] for name in names} | {MANIFEST: (path / MANIFEST).stat().st_size}
    return CutResult(path, kept, record["dropped"], sizes,
                     bytes_before=sum(listed.values()) + bundle.resolve(MANIFEST).stat().st_size,
                     bytes_after=sum(sizes.values()),
                     pin=sha256(path / MANIFEST))


def choose(bundle: Bundle, target: str, recipe: str | None) -> list[Artifact]:
    """The artifacts ``target`` keeps: ``recipe``'s, or the runtime's own default among the verified ones
    of its backend (``bundle.preferred``: int8-dynamic first, fp32 last), or all of them."""
    spec = TARGETS[target]
    have = ", ".join(f"{a.recipe}{'' if a.passed else ' (failed verification)'}" for a in bundle.artifacts) or "none"
    if recipe is not None:
        match = [a for a in bundle.artifacts if a.recipe == recipe]
        if not match:
            raise ConverterInputError(f"{str(bundle.path)!r} has no artifact {recipe!r} (it has: {have})",
                                      "pass one of those to --recipe, or convert with --recipe " + recipe)
        if not match[0].passed:
            raise ConverterInputError(f"{recipe} in {str(bundle.path)!r} failed verification, so it is not shipped",
                                      "choose a verified --recipe, or convert the model again")
        _fits(match[0], target, spec)
        return match[:1]
    usable = [a for a in bundle.artifacts if a.backend == spec.backend and a.passed
              and a.precision not in spec.cannot_run]
    if not usable:
        runs = f"a verified {spec.backend} artifact" + (f" other than {', '.join(spec.cannot_run)}"
                                                        if spec.cannot_run else "")
        raise ConverterInputError(f"--target {target} needs {runs}, and {str(bundle.path)!r} has none (it has: {have})",
                                  f"convert with --format {spec.backend} (the default builds tflite and onnx), or "
                                  "choose another --target")
    return [preferred(usable)] if spec.single else usable


def _fits(artifact: Artifact, target: str, spec: Target) -> None:
    if artifact.backend != spec.backend:
        raise ConverterInputError(f"--recipe {artifact.recipe} is not a {spec.backend} artifact, and --target {target} "
                                  f"runs {spec.backend} only ({spec.reader})",
                                  f"choose a {spec.backend}:… recipe, or the --target that runs {artifact.backend}")
    if artifact.precision in spec.cannot_run:
        raise ConverterInputError(f"{spec.reader} cannot run {artifact.recipe}: LiteRT.js exposes no scale and zero "
                                  "point for its int8 logits", "choose another --recipe, or --target phone")


def files_for(bundle: Bundle, spec: Target, kept: list[Artifact]) -> list[str]:
    """The files to copy: the Python runtime's tokenizer.json always (so ``pocketbert-run`` can check
    the cut bundle before it ships), vocab.txt and labels.txt for the readers that tokenize from them,
    and the kept artifacts."""
    settings = bundle.tokenizer_settings
    names = [settings["tokenizer_file"]]
    if spec.reads_vocabulary:
        names += [settings.get("vocab_file", VOCAB_FILE), LABELS_FILE]
    names += [a.file for a in kept]
    nested = [n for n in names if "/" in n]
    if nested:  # the manifest writer lists a flat directory, as the converter writes it
        raise ConverterInputError(f"{str(bundle.path)!r} keeps {nested[0]!r} in a sub-folder; a cut copies flat "
                                  "bundles only", "cut a bundle as the converter wrote it")
    return list(dict.fromkeys(names))


def _open(source: Path) -> Bundle:
    try:
        return Bundle.open(source)
    except BundleError as exc:
        raise ConverterInputError(exc.problem, exc.fix) from exc


def _verify_source(bundle: Bundle, names: list[str]) -> dict[str, int]:
    """The files to keep (each must be listed), then every file the source lists, checked against its size and
    SHA-256: a bundle that does not verify is a broken copy, and no part of it is shipped.  Name -> bytes."""
    try:
        return {name: bundle.file(name, entry="files key").stat().st_size
                for name in dict.fromkeys([*names, *bundle.manifest["files"]])}
    except BundleError as exc:
        raise ConverterInputError(f"the source bundle does not verify: {exc.problem}", exc.fix) from exc


def _check_models(bundle: Bundle, kept: list[Artifact]) -> None:
    """Each kept model file opened as the runtime opens it: its inputs must be the manifest's and a TFLite
    file's signatures its listed buckets (``contract.check_model_file``), or the cut would ship a bundle
    that the runtime refuses.  A backend that is not installed here cannot look: its file was still
    checked against its SHA-256."""
    vocab = bundle.listed_text(bundle.tokenizer_settings.get("vocab_file") or VOCAB_FILE)
    for artifact in kept:
        try:
            # the labels and vocabulary a TFLite file packs need no backend to be read
            check_packed_files(artifact.backend, bundle.resolve(artifact.file), file=artifact.file,
                               labels=bundle.labels, vocab=vocab)
            if not backend_installed(artifact.backend):
                continue
            model = open_backend(artifact, bundle.input_names, threads=1)
            check_model_file(artifact.file, artifact.details, model.buckets)
        except (BundleError, ModelError) as exc:
            raise ConverterInputError(f"the source bundle does not verify: {exc.problem}", exc.fix) from exc


def _read_files(manifest_path: Path) -> dict:
    return json.loads(manifest_path.read_text(encoding="utf-8"))["files"]
