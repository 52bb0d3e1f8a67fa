"""What users would otherwise pick, built from the bundle's own source checkpoint, for the same run.

* ``peer:torch-eager-fp32``: the Hugging Face checkpoint in PyTorch eager mode.
* ``peer:ort-optimum-fp32``: the plain ONNX export (``torch.onnx.export`` of the checkpoint as the
  converter calls it, without the converter's own fusions) passed through ONNX Runtime's transformer
  optimizer (``onnxruntime.transformers.optimizer.optimize_model``, model type ``bert``, heads and width
  detected): what Optimum's ``ORTOptimizer`` runs.
* ``peer:ort-optimum-int8-dynamic``: that optimised graph through ``quantize_dynamic`` (int8 weights,
  per-tensor, ONNX Runtime's defaults: Optimum's dynamic ``avx512_vnni`` configuration).
* ``peer:tflite-plain-fp32``: the fp32 TFLite export of the model *without* our optimisations.

The plain exports come from the converter itself (``--recipe onnx:fp32,tflite:fp32``, no ``--opt``), so
peer and bundle differ only in what is being compared.  When the bundle under test is already that
plain conversion, its own files are used instead of converting again.  Peers are cached under the
work directory, keyed by checkpoint, task, labels and buckets.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

PEERS = ("peer:torch-eager-fp32", "peer:ort-optimum-fp32", "peer:ort-optimum-int8-dynamic", "peer:tflite-plain-fp32")


@dataclass
class Peer:
    runner: str
    kind: str  # measure kind: torch | onnx | tflite
    path: Path
    precision: str
    note: str = ""


class PeerError(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


def source_checkpoint(manifest: dict, override: str | None = None) -> Path:
    """The checkpoint the bundle was converted from (``--checkpoint`` wins), which must still exist."""
    path = Path(override or (manifest.get("source") or {}).get("checkpoint") or "")
    if not str(path) or not (path / "config.json").is_file():
        raise PeerError(f"the bundle's source checkpoint {str(path) or '(none recorded)'!r} is not a Hugging Face "
                        "directory on this machine (peers and the MAC count are built from it)",
                        "pass --checkpoint DIR (the directory the bundle was converted from), or leave out --peers")
    return path


def plain_bundle(bundle: Path, manifest: dict, buckets: list[int]) -> bool:
    """True if the bundle is itself the plain conversion: no --opt, fp32 ONNX and TFLite with these buckets."""
    if manifest.get("opts"):
        return False
    recipes = {a["recipe"]: a for a in manifest["artifacts"]}
    tflite = recipes.get("tflite:fp32")
    return ("onnx:fp32" in recipes and tflite is not None
            and set(buckets) <= set(tflite.get("details", {}).get("buckets", [])))


def _cache_key(checkpoint: Path, manifest: dict, buckets: list[int]) -> str:
    text = json.dumps([str(checkpoint.resolve()), manifest["task"], manifest["labels"], sorted(buckets)])
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def optimize_like_optimum(plain: Path, dest: Path) -> dict:
    """ORT's transformer optimizer on a plain export; returns the fused-operator counts."""
    from onnxruntime.transformers.optimizer import optimize_model

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the optimizer prints its progress
            model = optimize_model(str(plain), model_type="bert", num_heads=0, hidden_size=0)
        model.save_model_to_file(str(dest))
        return {k: v for k, v in model.get_fused_operator_statistics().items() if v}
    except Exception as exc:  # what an Optimum user would get too: the unoptimised graph, said so in the notes
        import shutil

        shutil.copyfile(plain, dest)
        return {f"optimizer failed ({type(exc).__name__}), plain graph used": 1}


def plain_onnx(checkpoint: Path, manifest: dict, dest: Path) -> None:
    """The checkpoint through the converter's ``torch.onnx.export`` call, un-fused: the graph an Optimum
    user hands ORT's optimizer (the converter's own bundles hold fused graphs)."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.backends.onnx import export_onnx
    from pocketbert.converter.inputs.encoding import encode
    from pocketbert.converter.backends.logits_model import LogitsModel

    loaded = loading.load(str(checkpoint), task=manifest["task"], labels=list(manifest["labels"]))
    names = list(loaded.family.input_names)
    example = encode(loaded.tokenizer, ["a short one", "a somewhat longer example sentence, with padding"],
                     input_names=names, max_length=64)
    export_onnx(LogitsModel(loaded.model, names).eval(), example, names, "logits", dest=dest)


def quantize_like_optimum(fp32: Path, dest: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    # The dynamo exporter stores value_info for initializers, which the quantiser's shape
    # inference then rejects (README, "Measured choices"): drop those entries first.
    initializers = {i.name for i in model.graph.initializer}
    keep = [vi for vi in model.graph.value_info if vi.name not in initializers]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)
    clean = dest.with_name(dest.stem + ".input.onnx")
    onnx.save(model, str(clean))
    quantize_dynamic(str(clean), str(dest), weight_type=QuantType.QInt8, per_channel=False)
    clean.unlink()


def build(bundle: Path, manifest: dict, buckets: list[int], work_dir: Path, checkpoint: str | None = None,
          log=print, tflite: bool = True) -> list[Peer]:
    """Build (or reuse from the cache) the four peers of a bundle, for TFLite sequence ``buckets``
    (without ``tflite``, the three others: no plain TFLite conversion when no TFLite file is measured)."""
    source = source_checkpoint(manifest, checkpoint)
    name = (manifest.get("source") or {}).get("builtin") or source.name
    buckets = sorted({b for b in buckets if b <= manifest["max_sequence_length"]})
    peers = [Peer("peer:torch-eager-fp32", "torch", source, "fp32", note="Hugging Face checkpoint, PyTorch eager")]
    if tflite:
        peers.append(_tflite_peer(bundle, manifest, buckets, work_dir, source=source, name=name, log=log))
    optimum_dir = work_dir / "peers" / _cache_key(source, manifest, buckets) / "optimum-from-plain-export"
    optimum_dir.mkdir(parents=True, exist_ok=True)
    fp32, int8 = optimum_dir / "model.optimized.onnx", optimum_dir / "model.optimized.int8-dynamic.onnx"
    info = optimum_dir / "optimizer.json"
    if not (fp32.is_file() and int8.is_file() and info.is_file()):
        log(f"  ONNX Runtime optimizer + quantize_dynamic on the plain export of {name}…")
        from pocketbert.converter.quiet import silenced

        with silenced():  # the quantiser logs a pre-processing hint on every call
            plain_onnx(source, manifest, optimum_dir / "model.plain.onnx")
            fused = optimize_like_optimum(optimum_dir / "model.plain.onnx", fp32)
            quantize_like_optimum(fp32, int8)
        info.write_text(json.dumps({"fused": fused}))
    fused = json.loads(info.read_text())["fused"]
    fused_text = ", ".join(f"{k} {v}" for k, v in sorted(fused.items())) or "nothing fused"
    peers.append(Peer("peer:ort-optimum-fp32", "onnx", fp32, "fp32", note=f"ORT transformer optimizer: {fused_text}"))
    peers.append(Peer("peer:ort-optimum-int8-dynamic", "onnx", int8, "int8-dynamic",
                      note="optimizer + quantize_dynamic (QInt8, per-tensor)"))
    return peers


def _tflite_peer(bundle: Path, manifest: dict, buckets: list[int], work_dir: Path, source: Path, name: str,
                 log) -> Peer:
    if plain_bundle(bundle, manifest, buckets):
        plain_dir, reused = bundle, True
    else:
        plain_dir, reused = work_dir / "peers" / _cache_key(source, manifest, buckets) / "plain", False
        if not (plain_dir / "manifest.json").is_file():
            from pocketbert.converter.pipeline import ConvertOptions, convert
            from pocketbert.converter.quiet import silenced

            log(f"  converting the plain fp32 peers of {name} (no --opt, buckets {buckets})…")
            with silenced():
                convert(ConvertOptions(checkpoint=str(source), out=plain_dir, task=manifest["task"],
                                       labels=list(manifest["labels"]), recipes="onnx:fp32,tflite:fp32",
                                       buckets=sorted(buckets), verify_samples=64, measure_latency=False,
                                       overwrite=True, allow_accuracy_loss=True))
    note = "the bundle's own file (it is the plain conversion)" if reused else "converter, no --opt"
    return Peer("peer:tflite-plain-fp32", "tflite", plain_dir / "model.tflite", "fp32", note=note)
