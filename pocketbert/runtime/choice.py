"""``backend="auto"``: the artifact that runs fastest on the machine the runtime runs on.

Which file is fastest depends on the CPU, not on the one that converted the bundle: int8 buys little on
an AVX2 CPU without VNNI and a lot with VNNI or AMX, and TFLite beats ONNX Runtime on some models and
loses on others.  So at the first load on a machine, every verified artifact that meets the caller's
``precision=`` (and whose backend is installed) runs a few times on one row of ``MEASURE_LENGTH``
tokens (fewer when the bundle takes no longer row), in alternation so that background load hits all alike; the fastest median wins.  The choice is
cached outside the bundle, under ``$XDG_CACHE_HOME/pocketbert/choices`` (or ``~/.cache/…``), keyed by
the manifest's SHA-256, the thread count and a fingerprint of the machine (CPU, its matrix instruction
sets, usable cores, ONNX Runtime and LiteRT versions), so later loads cost nothing.

A cached choice is not kept for ever when it was a near thing: while the two fastest cached figures are within
``NOISE`` of each other (a loaded machine at the first load can make that so), each load measures again, up to
``MAX_MEASUREMENTS`` measurements, and the choice follows each artifact's median over them.
``POCKETBERT_AUTO=measure`` measures again now, whatever the cache holds, and starts its history anew.

``POCKETBERT_AUTO=static`` (or ``load(..., measure=False)``) skips the measurement, for deterministic
runs: the choice then follows the converting machine's latency figures in the manifest when every
candidate has one, else the fixed rule (ONNX Runtime first, int8 first).  Pinning ``backend=``,
``precision=`` with one candidate, or ``recipe=`` never measures.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import bundle as bundles
from . import machine
from .backends import BACKENDS, open_backend
from .bundle import Artifact, Bundle, precision_rank
from .contract import MANIFEST, sha256

MEASURE_LENGTH = 128  # tokens of the measured row (the benchmarks' latency configuration)
WARMUP_RUNS = 2
TIMED_RUNS = 5
ENV = "POCKETBERT_AUTO"  # "static": no measurement; "measure": measure again, whatever the cache holds
#: the two fastest cached figures closer than this (runner-up / fastest below 1 + NOISE) are a near thing: measured
#: again at the next load (a threshold chosen, not a measured noise figure)
NOISE = 0.10
MAX_MEASUREMENTS = 3  # a near thing is measured at most this many times; then the medians over them stand
CACHE_VERSION = 1


@dataclass
class Choice:
    """Which artifact ``auto`` picked and why (``pipeline.info()["choice"]``)."""

    recipe: str
    rule: str  # "measured", "cached", "manifest figures", "fixed rule", "pinned", "only candidate"
    reason: str
    #: recipe -> median milliseconds of the measured row (this machine, or the manifest's for the hint)
    figures: dict[str, float] = field(default_factory=dict)
    cache_file: str | None = None
    measurements: list[dict[str, float]] = field(default_factory=list)  # each measurement's figures, oldest first

    def to_json(self) -> dict:
        return {"recipe": self.recipe, "rule": self.rule, "reason": self.reason, "figures": self.figures,
                "cache_file": self.cache_file, "measurements": self.measurements}


def within_noise(figures: dict[str, float]) -> bool:
    """Whether the two fastest figures are within ``NOISE`` of each other."""
    if len(figures) < 2:
        return False
    best, runner_up = sorted(figures.values())[:2]
    return runner_up < best * (1 + NOISE)


def _again(cached: Choice | None) -> bool:
    """Whether a cached choice is measured again: asked (``POCKETBERT_AUTO=measure``), or a near thing not yet
    measured ``MAX_MEASUREMENTS`` times."""
    if os.environ.get(ENV, "").strip().lower() == "measure":
        return True
    return cached is not None and len(cached.measurements) < MAX_MEASUREMENTS and within_noise(cached.figures)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pocketbert" / "choices"


def fingerprint() -> dict:
    """What decides which artifact is fastest: the CPU and its instruction sets, cores, the two backends."""
    info = machine.describe()
    return {"cpu": info["cpu"], "architecture": platform.machine(), "matrix_flags": info["matrix_flags"],
            "usable_cpus": info["usable_cpus"],
            "versions": {k: info["versions"].get(k) for k in ("onnxruntime", "ai-edge-litert")}}


def candidates(bundle: Bundle, precision: str | None) -> list[Artifact]:
    """Verified artifacts meeting ``precision`` whose backend is installed, in the fixed rule's order."""
    usable = [a for a in bundle.artifacts if a.passed and (precision is None or a.precision == precision)]
    runnable = [a for a in usable if bundles.backend_installed(a.backend)]
    if not runnable:
        return []
    order = {name: place for place, name in enumerate(BACKENDS.names())}
    return sorted(runnable, key=lambda a: (order.get(a.backend, len(order)), precision_rank(a.precision)))


def choose(bundle: Bundle, precision: str | None, threads: int | None, measure: bool | None = None,
           timer=None, checked=None) -> tuple[Artifact, Choice]:
    """The artifact ``auto`` runs.  ``timer(artifacts) -> {recipe: ms}`` measures (injectable for tests);
    ``checked(artifact) -> artifact``: the integrity check every file read passes first."""
    options = candidates(bundle, precision)
    if not options:  # the fixed rule's errors: no such artifact, or its backend not installed
        return bundle.select("auto", precision=precision), Choice("", "fixed rule", "")
    by_recipe = {a.recipe: a for a in options}
    if len(options) == 1:
        return options[0], Choice(options[0].recipe, "only candidate", "the only verified artifact that fits")
    if measure is None:
        measure = os.environ.get(ENV, "").strip().lower() != "static"
    if not measure:
        return _static(bundle, options)
    key = _cache_key(bundle, threads, precision)
    path = cache_dir() / f"{key}.json"
    cached = _read_cache(path, by_recipe)
    if cached is not None and not _again(cached):
        return by_recipe[cached.recipe], cached
    measured = (timer or (lambda arts: measure_ms(bundle, [(checked or _same)(a) for a in arts], threads)))(options)
    asked = os.environ.get(ENV, "").strip().lower() == "measure"
    history = [*([] if cached is None or asked else cached.measurements), {k: round(v, 3) for k, v in measured.items()}]
    figures = {k: round(float(np.median([m[k] for m in history if k in m])), 3) for k in measured}
    best = min(figures, key=figures.get)
    runner_up = sorted(figures.values())[1]
    times = f", median of {len(history)} measurements" if len(history) > 1 else ""
    choice = Choice(best, "measured", f"fastest of {len(figures)} artifacts on this machine: {figures[best]:.1f} ms "
                    f"for one row of {_length(bundle)} tokens, {runner_up / figures[best]:.2f}x ahead of the next "
                    f"({threads or 'default'} threads{times})", figures, cache_file=str(path), measurements=history)
    _write_cache(path, choice)
    return by_recipe[best], choice


def _same(artifact: Artifact) -> Artifact:
    return artifact


def _static(bundle: Bundle, options: list[Artifact]) -> tuple[Artifact, Choice]:
    figures = {a.get("recipe"): (a.get("latency_ms") or {}).get("median") for a in bundle.manifest["artifacts"]
               if isinstance(a.get("latency_ms"), dict)}
    hints = {a.recipe: figures.get(a.recipe) for a in options}
    if all(isinstance(v, (int, float)) for v in hints.values()):
        best = min(options, key=lambda a: hints[a.recipe])
        return best, Choice(best.recipe, "manifest figures", f"{ENV}=static or measure=False: the converting "
                            "machine's figures in the manifest (not measured here)", hints)
    first = fixed_rule_order(options, machine.describe()["matrix_flags"])[0]
    return first, Choice(first.recipe, "fixed rule", f"{ENV}=static or measure=False and the manifest has no "
                         "figure for every artifact: ONNX Runtime first, int8 first (on x86 without VNNI or AMX, "
                         "TFLite int4 before TFLite int8)")


def fixed_rule_order(options: list[Artifact], flags) -> list[Artifact]:
    """``options`` (ONNX Runtime first, int8 first) as the fixed rule takes them: on an x86 CPU with AVX2 but no
    VNNI or AMX, a TFLite int8 file goes behind the bundle's TFLite int4 one.  XNNPACK's AVX2 int8-weight kernel
    sign-extends to 16 bits for vpmaddwd and gains little over fp32; its int4 kernel uses vpmaddubsw
    (docs/speed.md, "AVX2 without VNNI")."""
    flags = set(flags)
    if "avx2" not in flags or flags & {"avx512_vnni", "avx_vnni", "amx_int8"}:
        return list(options)
    has_int4 = any(a.backend == "tflite" and a.precision.startswith("int4") for a in options)
    return sorted(options, key=lambda a: has_int4 and a.backend == "tflite" and a.precision.startswith("int8"))


def _length(bundle: Bundle) -> int:
    # input_length, not max_sequence_length: a TFLite file whose largest bucket is shorter takes no longer row
    return min(MEASURE_LENGTH, bundle.input_length)


def _cache_key(bundle: Bundle, threads: int | None, precision: str | None) -> str:
    text = json.dumps([CACHE_VERSION, sha256(bundle.resolve(MANIFEST)), threads, precision, fingerprint()],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _read_cache(path: Path, by_recipe: dict[str, Artifact]) -> Choice | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("recipe") not in by_recipe:
        return None  # from another bundle state or damaged: measure again
    figures = data.get("figures") or {}
    history = [m for m in data.get("measurements") or [figures] if isinstance(m, dict)]
    return Choice(data["recipe"], "cached", f"measured at an earlier load on this machine: {data.get('reason', '')}",
                  figures, cache_file=str(path), measurements=history)


def _write_cache(path: Path, choice: Choice) -> None:
    """Best effort: a read-only home only means measuring again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(choice.to_json(), indent=1), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        choice.cache_file = None


def _feeds(bundle: Bundle) -> dict[str, np.ndarray]:
    """One row of ``_length`` tokens: [CLS] ids… [SEP], mask all ones (every backend does the same work)."""
    special = bundle.tokenizer_settings.get("special_tokens") or {}
    cls_id, sep_id = (special.get(k, {}).get("id", d) for k, d in (("cls", 101), ("sep", 102)))
    vocab = int(bundle.tokenizer_settings.get("vocab_size") or 1000)
    length = _length(bundle)
    ids = (np.arange(length, dtype=np.int64) * 7919) % max(1, vocab - 1000) + min(1000, vocab // 2)
    ids[0], ids[-1] = cls_id, sep_id
    feeds = {"input_ids": ids[None, :], "attention_mask": np.ones((1, length), np.int64),
             "token_type_ids": np.zeros((1, length), np.int64)}
    return {name: feeds[name] for name in bundle.input_names}


def measure_ms(bundle: Bundle, artifacts: list[Artifact], threads: int | None) -> dict[str, float]:
    """Median milliseconds of each artifact on one row, the artifacts run in alternation."""
    feeds = _feeds(bundle)
    backends = {a.recipe: open_backend(a, bundle.input_names, threads) for a in artifacts}
    for backend in backends.values():
        for _ in range(WARMUP_RUNS):
            backend.run(feeds, quiet=True)
    times: dict[str, list[float]] = {recipe: [] for recipe in backends}
    for _ in range(TIMED_RUNS):
        for recipe, backend in backends.items():
            start = time.perf_counter()
            backend.run(feeds, quiet=True)
            times[recipe].append(time.perf_counter() - start)
    return {recipe: float(np.median(t) * 1000) for recipe, t in times.items()}
