"""``--max-latency MS``: a latency model of the int4 file, measured on the converting machine from probe files built
from the checkpoint's own config.

The same multiply-adds run at very different speeds on CPUs with and without fast int8 dot products (an AVX2-only
CPU gains 1.8x from int4 where AVX-512 VNNI gains 3x), and a block's attention costs time a MAC count undervalues,
so speed is not guessed from constants: a few probe encoders of the checkpoint's family and config (random weights:
the time does not depend on them), 1 and 2 blocks at its feed-forward width and at half, with its structural opts
and a small word table (a lookup's time does not depend on the table's rows), are written the way the final file is
(``tflite:int4-dynamic`` through the TFLite backend, one signature at sequence 128) and timed at batch 1 × 128 with
the run's threads, in alternating rounds (:func:`converter.timing.candidate_timing.alternating_rounds_ms`).  The fit:

    ms = constant + blocks × block_ms + feed-forward units × unit_ms + Δ(Linear MACs outside the blocks) × mac_ms

where ``mac_ms`` is ``unit_ms`` over a unit's multiply-adds (a factored table's projection is priced by it).  The fit
is cached in the one command's work folder (``OUT.levers/latency.json``) under a key of the CPU, its matrix flags,
the threads, the probes' config and opts and the TFLite runtime's version, so a rerun does not probe again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from .shapes import SEQUENCE, Shape, from_config, macs

CACHE = "latency.json"
#: the probes' word table: a lookup costs the same at any number of rows, and a small table exports fast
PROBE_VOCAB = 512
#: timing rounds and calls per round for each probe (alternating: a burst of load lands in one round)
ROUNDS, RUNS = 15, 10
#: the least a measured file may differ from its prediction before it is called a miss: timings on a busy machine
#: move by this much from one minute to the next
NOISE_FLOOR = 0.10


@dataclass(frozen=True)
class LatencyModel:
    """Milliseconds of one call at batch 1 × :data:`SEQUENCE` of the int4 file of a :class:`Shape`."""

    constant_ms: float  # the embeddings, the head and the call itself
    block_ms: float  # a block without its feed-forward units: attention, norms, residuals
    unit_ms: float  # one feed-forward unit of one block
    mac_ms: float  # one multiply-add of a Linear outside the blocks, priced as a feed-forward unit's
    outside_macs: int  # the probes' multiply-adds outside the blocks
    cpu: str
    threads: int
    noise: float  # the probes' round-to-round spread or the fit's worst residual, whichever is larger
    measured: str  # when (UTC)
    probes: list = field(default_factory=list)  # [{"blocks", "units", "ms", "rounds_ms"}]

    def predict(self, shape: Shape) -> float:
        outside = _outside_macs(shape) - self.outside_macs
        return (self.constant_ms + shape.layers * self.block_ms + _units(shape) * self.unit_ms
                + outside * self.mac_ms)

    def __call__(self, shape: Shape) -> float:
        return self.predict(shape)

    def describe(self) -> str:
        return (f"latency model ({self.cpu}, {threads_words(self.threads)}, batch 1 × "
                f"{SEQUENCE}, int4 file): {self.constant_ms:.2f} ms + {self.block_ms:.3f} ms a block + "
                f"{self.unit_ms * 1000:.3f} ms per 1,000 feed-forward units of a block; fitted on "
                f"{len(self.probes)} probe files ("
                + ", ".join(f"{p['blocks']}×{p['units']} {p['ms']:.2f} ms" for p in self.probes)
                + f"), noise ±{self.noise:.0%}")

    def where(self, cached: bool) -> str:
        when = "measured now" if not cached else f"measured {self.measured} (cached)"
        return f"at sequence {SEQUENCE}, batch 1, on this CPU ({self.cpu}), predicted from probes {when}"

    @property
    def tolerance(self) -> float:
        return max(NOISE_FLOOR, self.noise)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict) -> LatencyModel:
        return cls(**raw)


def threads_words(threads: int) -> str:
    return f"{threads} thread" + ("s" if threads != 1 else "")


def milliseconds(ms: float) -> str:
    """A time as the one command prints it: two decimals below 10 ms, where a tenth is a large share."""
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms"


def _units(shape: Shape) -> int:
    """Feed-forward units summed over every block (a MobileBERT block has several feed-forward blocks)."""
    return sum(block.linears[up].out for block in shape.blocks for up, _ in block.ffn)


def _outside_macs(shape: Shape) -> int:
    return macs(replace(shape, blocks=()))


def _unit_macs(shape: Shape) -> int:
    """One feed-forward unit's multiply-adds over a sequence: its row of the up Linear and column of the down one."""
    block = shape.blocks[0]
    up, down = block.ffn[0]
    return SEQUENCE * (block.linears[up].inp + block.linears[down].out)


# --- the probes ---------------------------------------------------------------------------------------------------


def layouts(raw: dict) -> list[tuple[int, int]]:
    """The probes' (blocks, feed-forward width): 1 and 2 blocks, at the checkpoint's width and at half."""
    width = _ffn_width(raw)
    return [(1, width), (2, width), (1, max(1, width // 2)), (2, max(1, width // 2))]


def _ffn_width(raw: dict) -> int:
    from ..families import family_for

    return int(raw[family_for(raw.get("model_type", "")).ffn_width_key])


def probe_config(raw: dict, blocks: int, width: int) -> dict:
    """The checkpoint's config (as a dict) at ``blocks`` blocks and ``width`` feed-forward units, a small word
    table, unfactored, in float32."""
    from ..families import family_for

    family = family_for(raw.get("model_type", ""))
    config = {k: v for k, v in raw.items() if k not in ("pocketbert", "transformers_version", "dtype", "torch_dtype")}
    config.update({family.ffn_width_key: width, "vocab_size": PROBE_VOCAB})
    config.update({_layers_key(raw): blocks})
    return config


def _layers_key(raw: dict) -> str:
    return "n_layers" if "n_layers" in raw else "num_hidden_layers"


def build_probe(config: dict, opts: tuple[str, ...], dest: Path, threads: int) -> Path:
    """The int4 TFLite file of a random model of ``config`` with the structural ``opts``: what the converter writes
    for ``tflite:int4-dynamic`` (its backend's export and quantisation), one signature at :data:`SEQUENCE`."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification

    from .. import backends
    from ..families import family_for
    from ..backends.logits_model import LogitsModel
    from ..transforms import OPTS

    family = family_for(config.get("model_type", ""))
    ner = any("TokenClassification" in a for a in config.get("architectures") or [])
    fields = {k: v for k, v in config.items() if k != "architectures"}
    auto = AutoModelForTokenClassification if ner else AutoModelForSequenceClassification
    torch.manual_seed(0)
    model = auto.from_config(AutoConfig.for_model(**fields)).float().eval()
    for name in opts:
        OPTS[name].apply(model, family)
    names = list(family.input_names)
    spec = backends.ExportSpec(model=LogitsModel(model, names).eval(), family=family, input_names=names,
                               output_name="logits", max_length=SEQUENCE,
                               make_batches=lambda texts, pad_to=None, **kw: [feeds(names, pad_to)],
                               threads=threads, buckets=[SEQUENCE])
    backends.get("tflite").quantize(spec, "int4-dynamic", dest, None, accept=None, float_fallback=False)
    return dest


def feeds(names: list[str], length: int = SEQUENCE) -> dict[str, np.ndarray]:
    """One row of ``length`` attended tokens (ids inside the probes' small table)."""
    row = {"input_ids": (np.arange(length, dtype=np.int64) % (PROBE_VOCAB - 1) + 1)[None],
           "attention_mask": np.ones((1, length), np.int64), "token_type_ids": np.zeros((1, length), np.int64)}
    return {name: row[name] for name in names}


def measure(raw: dict, opts: tuple[str, ...], threads: int, probes: list[tuple[int, int]],
            log=print) -> list[list[float]]:
    """Each probe's median milliseconds in each round, the probes timed in turn (so load hits them alike)."""
    from .. import backends
    from ..timing.candidate_timing import alternating_rounds_ms
    from ..families import family_for
    from ..quiet import silenced

    names = list(family_for(raw.get("model_type", "")).input_names)
    with tempfile.TemporaryDirectory(prefix="pocketbert-latency-") as folder:
        files = []
        for blocks, width in probes:
            log(f"  latency probe: {blocks} block{'s' if blocks > 1 else ''} × {width:,} feed-forward units, "
                f"int4 file at sequence {SEQUENCE}")
            with silenced():  # the TFLite converter narrates on the C++ side
                files.append(build_probe(probe_config(raw, blocks, width), opts,
                                         Path(folder) / f"probe-{blocks}-{width}.tflite", threads))
        backend = backends.get("tflite")
        with silenced():  # and the runtime says which delegate it made at the first call
            runners = [backend.load(path, names, "int4-dynamic", threads=threads) for path in files]
            return alternating_rounds_ms(runners, feeds(names), rounds=ROUNDS, runs=RUNS)


def fit(raw: dict, probes: list[tuple[int, int]], rounds: list[list[float]], threads: int) -> LatencyModel:
    """The latency model through each probe's time in its quickest round (other work on the machine only ever adds
    time, and on a loaded machine the median round is the load's), every term kept ≥ 0."""
    from scipy.optimize import nnls

    probe_shapes = [from_config(probe_config(raw, blocks, width)) for blocks, width in probes]
    times = np.array([float(np.min(r)) for r in rounds])
    features = np.array([[1.0, s.layers, _units(s)] for s in probe_shapes])
    scale = features.max(axis=0)  # columns of one magnitude: units run to thousands
    coefficients, _ = nnls(features / scale, times)
    constant, block, unit = coefficients / scale
    residual = max(abs(features @ (coefficients / scale) - times) / times)
    spread = max((np.percentile(r, 75) - np.percentile(r, 25)) / np.median(r) for r in rounds)
    first = probe_shapes[0]
    return LatencyModel(constant_ms=round(float(constant), 4), block_ms=round(float(block), 4),
                        unit_ms=float(unit), mac_ms=float(unit) / _unit_macs(first),
                        outside_macs=_outside_macs(first), cpu=_cpu(), threads=threads,
                        noise=round(float(max(residual, spread)), 3),
                        measured=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                        probes=[{"blocks": b, "units": w, "ms": round(float(t), 3), "rounds_ms": r}
                                for (b, w), t, r in zip(probes, times, rounds)])


def _cpu() -> str:
    from pocketbert.runtime import machine

    return machine.describe()["cpu"]


# --- the cache ----------------------------------------------------------------------------------------------------


def cache_key(raw: dict, opts: tuple[str, ...], threads: int) -> str:
    """What a fit depends on: the CPU and its matrix instructions, the threads, the probes and the runtime."""
    from pocketbert.runtime import machine

    info = machine.describe()
    parts = {"cpu": info["cpu"], "flags": info["matrix_flags"], "threads": threads, "opts": list(opts),
             "probes": [probe_config(raw, b, w) for b, w in layouts(raw)],
             "litert": info["versions"].get("ai-edge-litert"), "rounds": [ROUNDS, RUNS]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def measured_model(raw: dict, opts: tuple[str, ...], threads: int, work: Path,
                   log=print, overwrite: bool = False) -> tuple[LatencyModel, bool]:
    """The latency model for the checkpoint of config ``raw`` (a dict) with ``opts`` at ``threads`` on this machine:
    from ``work``'s cache, or probed and fitted now and cached; ``(model, cached)``.  ``overwrite``: a cache that is
    not valid is measured again instead of refused."""
    path = Path(work) / CACHE
    cache = _read(path, overwrite)
    key = cache_key(raw, opts, threads)
    if key in cache["models"]:
        model = cache["models"][key]
        log(model.describe() + f" [measured {model.measured}, cached in {path}]")
        return model, True
    log(f"measuring the int4 file's latency on this CPU ({_cpu()}, {threads_words(threads)}) with "
        f"{len(layouts(raw))} probe files built from the checkpoint's config")
    probes = layouts(raw)
    model = fit(raw, probes, measure(raw, opts, threads, probes, log=log), threads)
    log(model.describe())
    cache["models"][key] = model.to_json()
    save(path, cache)
    return model, False


def _read(path: Path, overwrite: bool = False) -> dict:
    """The cache, its models read back; one that is not valid is refused with the fix (or, ``overwrite``, empty).
    Read here, not by the work folder's reader in one_command/, which imports this folder."""
    from ..errors import OutputError

    try:
        cache = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        models, planned = cache.get("models", {}), cache.get("planned")
        if not isinstance(models, dict) or planned is not None and not all(
                isinstance(planned.get(k), (int, float)) for k in ("target_ms", "predicted_ms", "tolerance")):
            raise TypeError("not a record of latency models")
        cache["models"] = {key: LatencyModel.from_json(model) for key, model in models.items()}
    except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError) as exc:
        if overwrite:
            return {"models": {}}
        raise OutputError(f"{path} is not a valid record: it cannot be read as a cache of latency models ({exc})",
                          f"pass --overwrite to start a new record (the checkpoints in {path.parent} stay), or "
                          f"delete {path}") from None
    return cache


def save(path: Path, cache: dict) -> None:
    cache = {**cache, "models": {k: m.to_json() if isinstance(m, LatencyModel) else m
                                 for k, m in cache.get("models", {}).items()}}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(cache, indent=1), encoding="utf-8")
    partial.replace(path)


def remember_target(work: Path, target_ms: float, predicted_ms: float, model: LatencyModel) -> None:
    """The plan's target and prediction, for the check after the conversion (:func:`verdict`)."""
    path = Path(work) / CACHE
    cache = _read(path)
    cache["planned"] = {"target_ms": target_ms, "predicted_ms": round(predicted_ms, 3), "tolerance": model.tolerance,
                        "cpu": model.cpu, "threads": model.threads}
    save(path, cache)


def planned_target(work: Path) -> dict | None:
    return _read(Path(work) / CACHE).get("planned")
