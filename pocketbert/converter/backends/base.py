"""The interface every export backend implements (ONNX here; TFLite plugs in the same way)."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from torch import nn

from pocketbert.runtime.backends import BACKENDS as RUNTIME_BACKENDS
from pocketbert.runtime.backends.base import Backend as RuntimeBackend
from pocketbert.runtime.contract import artifact_file

from ..families import Family
from ..timing.ladder_budget import Deadline, LadderBudget
from ..timing.quiet_timing import WORKER_PREFIX
from ..timing.speed_rule import settle


@dataclass
class ExportSpec:
    """What a backend needs to export one model: the module, its inputs and how to make data."""

    model: nn.Module  # wraps the HF model: forward(*inputs) -> logits
    family: Family
    input_names: list[str]
    output_name: str
    max_length: int
    #: texts -> named int64 inputs (for calibration); ``pad_to`` forces a static sequence length
    make_batches: Callable[..., list[dict[str, np.ndarray]]]
    threads: int = 2
    #: static sequence lengths for backends without dynamic shapes (TFLite signatures)
    buckets: list[int] = field(default_factory=list)


@dataclass
class ExportedArtifact:
    """One exported model file and how it was made."""

    recipe: str
    path: Path
    details: dict = field(default_factory=dict)


class Runner:
    """An artifact loaded by the runtime's own backend (``runtime.backends.open_backend``): named int64
    inputs -> logits.  Verification, the int8 judges and the latency figures run the code that ships:
    row-by-row dynamic int8 for ONNX, bucket signatures for TFLite, the same input checks."""

    def __init__(self, backend: RuntimeBackend, parallel: int = 1):
        self.backend = backend
        self.parallel = parallel  # rows of one call run this many at once (the backend holds as many instances)

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        rows = feeds["input_ids"].shape[0]
        if self.parallel < 2 or rows < 2:
            return self.backend.run(feeds)
        from concurrent.futures import ThreadPoolExecutor

        parts = np.array_split(np.arange(rows), min(self.parallel, rows))
        with ThreadPoolExecutor(len(parts), thread_name_prefix=WORKER_PREFIX) as pool:  # joined on leaving
            return np.concatenate(list(pool.map(lambda part: self.backend.run({k: v[part] for k, v in feeds.items()}),
                                                parts)))


class ExportBackend(ABC):
    """Writes one format.  A subclass declares ``name`` (its runtime backend's), the precisions it writes
    and, if ``--max-size`` may choose among them, the candidates for that."""

    name: str
    #: precision -> what the recipe ``name:precision`` builds, in recipe order (fp32 first: the float export)
    precisions: dict[str, str]
    #: ``--max-size``'s candidates, most accurate first (each about half the one before); empty: not offered
    size_ladder: tuple[str, ...] = ()

    #: precisions quantised for each sequence length on its own (a fixed-shape file's signatures, each calibrated
    #: apart), which the int8 judge reads at every length; every other precision quantises activations per
    #: token at run time, so a text's logits do not depend on the length it is padded to (TFLite int8-dynamic
    #: on the demo models: the same bits from every signature) and one length judges it
    length_specific: frozenset[str] = frozenset()

    def judged_per_length(self, precision: str) -> bool:
        return self.fixed_lengths and precision in self.length_specific

    @property
    def fixed_lengths(self) -> bool:
        """Static shapes: one graph per sequence-length bucket, each quantised on its own (declared by the
        runtime backend, which reads them)."""
        return RUNTIME_BACKENDS[self.name].fixed_lengths

    @property
    def order(self) -> int:
        return RUNTIME_BACKENDS[self.name].order

    @abstractmethod
    def export(self, spec: ExportSpec, dest: Path) -> ExportedArtifact:
        """Export the float model to ``dest``."""

    @abstractmethod
    def quantize(self, spec: ExportSpec, precision: str, dest: Path,
                 calibration: list[dict[str, np.ndarray]] | None,
                 accept: Callable[[Path], tuple[bool, dict]] | None = None,
                 float_fallback: bool = True, float_export: Path | None = None,
                 keep_float: Path | None = None) -> ExportedArtifact:
        """Export ``spec.model`` at a lower precision (``calibration``: static-shape batches).

        ``float_export``, when given, is a plain float export of exactly ``spec.model`` by this
        backend, to quantise instead of exporting the model again.  ``keep_float``: where to keep the float
        file this call exported to quantise, if it exported one (another ladder may quantise it too); a
        given ``float_export`` is the caller's and stays where it is.

        ``accept(path)`` judges a candidate on calibration text.  With ``float_fallback`` a backend
        may keep parts of the model in float until it passes; it must record the outcome as
        ``details["float_fallback"]`` with at least ``roles`` and ``accepted``.
        """

    def with_weights(self, source: Path, dest: Path, exported: dict[str, np.ndarray],
                     new: dict[str, np.ndarray], input_scales: dict[str, np.ndarray] | None = None) -> bool:
        """Write to ``dest`` the float file ``source`` (exported from a model with state dict ``exported``) with
        every weight taken from ``new`` instead, the same graph otherwise, except that the input of each Linear
        named in ``input_scales`` is first multiplied by its scale (smoothing's Mul); False when this backend
        cannot (then the caller exports the new model)."""
        return False

    def load(self, path: Path, input_names: Sequence[str], precision: str = "fp32", threads: int = 1) -> Runner:
        """Load an artifact for inference (verification, latency) as the runtime loads it from a bundle."""
        return Runner(self._open(path, input_names, precision, threads))

    def load_for_rows(self, path: Path, input_names: Sequence[str], precision: str = "fp32",
                      threads: int = 1) -> Runner:
        """Load an artifact to run many texts (verification, the int8 judges), not to time one.

        A fixed-length backend runs a batch's rows one at a time: there, one single-threaded interpreter per
        thread, each taking its share of the rows, does 1.45-1.9x the rows per second of one interpreter on
        all threads (LiteRT's XNNPACK on 2 vCPUs, MiniLM full-integer, sequence 32-256: small matrices leave
        the second thread waiting), with the same logits.  Other backends: :meth:`load`."""
        if not self.fixed_lengths or threads < 2:
            return self.load(path, input_names, precision, threads)
        return Runner(self._open(path, input_names, precision, 1, instances=threads), parallel=threads)

    def _open(self, path: Path, input_names: Sequence[str], precision: str, threads: int,
              instances: int = 1) -> RuntimeBackend:
        from pocketbert.runtime.backends import open_backend
        from pocketbert.runtime.bundle import Artifact as BundleArtifact

        artifact = BundleArtifact(recipe=f"{self.name}:{precision}", backend=self.name, precision=precision,
                                  file=Path(path).name, path=Path(path), details={}, passed=True)
        return open_backend(artifact, list(input_names), threads, instances)

    def filename(self, precision: str) -> str:
        return artifact_file(self.name, precision)

    @abstractmethod
    def weight_bytes(self, path: Path) -> dict[str, int]:
        """Bytes of the file's constant tensors per element type (``float32``, ``int8``, …): why a
        quantised file is the size it is."""


def judge_file(accept: Callable | None, path: Path, screen: bool = False) -> tuple[bool, dict]:
    """``accept(path)``, or its cheaper ``accept.screen(path)`` (``calibration_judge.CalibrationJudge`` has one) when
    ``screen``: figures to rank candidates by, never to accept one.  No judge accepts everything."""
    if accept is None:
        return True, {}
    return getattr(accept, "screen", accept)(path) if screen else accept(path)


def ladder_rules(accept: Callable | None, dest: Path) -> dict:
    """What a judge (``calibration_judge.CalibrationJudge``) asks of the search besides accuracy: its time bound
    (``budget``) and, for an int8 file, the speed check against the bundle's fp32 file (``speed``, timing ``dest``)."""
    speed, budget = getattr(accept, "speed", None), getattr(accept, "budget", None)
    return {"speed": speed and (lambda: speed(dest)), "budget": budget}


def float_fallback_search(roles: dict[str, list], attempt: Callable[..., tuple[bool, dict]],
                          enabled: bool = True, kept_as: str = "float", speed: Callable[[], tuple] | None = None,
                          budget: LadderBudget | None = None) -> dict:
    """The accuracy-driven float-fallback search both backends share.

    ``roles`` maps a Linear role (one kind of Linear across all layers, e.g. every FFN output
    projection) to its ops; ``attempt(float_roles, final, screen=False)`` quantises with those roles kept in
    float and judges the result (``final``: write it to the destination, else to a scratch file; ``screen``:
    a cheap judgement to rank by, see ``judge_file``).  All-int8 first.  If it fails, the ceiling: every role
    in float, judged in full, the most any step can win back (what keeping Linears in float cannot fix, such
    as the activations' ranges, stays).  When even the ceiling misses the bar, no step can meet it and the
    search stops there; otherwise each role's sensitivity is screened alone, then roles go back to float,
    most helpful first, each step judged in full, until the result passes (or, when the ceiling missed the
    target, until it meets the bar: no step can do more; with all-int8 meeting the bar, no step is tried).
    If none passes, the cheapest step whose figures say ``meets_bar`` (good enough to ship, short of the
    target) is written and accepted, with ``target_met`` False.  Returns ``details["float_fallback"]``.

    ``kept_as``: what the chosen roles are kept in, recorded as such: ``float`` for int8 files; an int4
    file keeps them in ``int8``, which wins back most of the accuracy at a quarter of float's bytes.

    ``budget``: the search takes no further step once its time is up (``ladder_budget``), recorded as ``budget``.
    ``speed()``: the file at the destination against the bundle's fp32 file; a slower one is not shipped
    (``speed_rule.settle``: a step with fewer roles in float, or none), recorded as ``speed``.
    """
    deadline = budget.begin() if budget is not None else None
    if speed is not None:
        attempt, speed = _timed_once_per_write(attempt, speed)
    ok, score = attempt([], True)
    search = [{"float_roles": [], **score}]
    steps = [([], score)]  # the cumulative steps, cheapest first
    if not ok and roles and enabled:
        reachable, ceiling = attempt(list(roles), False)
        search.append({"float_roles": list(roles), "ceiling": True, **ceiling})
        # the ceiling missing the target: the cheapest step meeting the bar is the goal, all-int8 if it does
        if reachable or (ceiling.get("meets_bar") and not score.get("meets_bar")):
            ok = _walk(roles, attempt, search, steps, stop_at_bar=not reachable, deadline=deadline, speed=speed)
    target_met = ok
    excluded = steps[-1][0]
    if not ok:
        excluded, ok = _good_enough(steps, attempt)
    checked = {}
    if ok and speed is not None:
        count = lambda chosen: sum(len(roles[r]) for r in chosen)  # noqa: E731
        shipped, ok, checked["speed"] = settle(steps, excluded, attempt, speed, count=count, deadline=deadline)
        target_met, excluded = target_met and shipped == excluded, shipped
    if deadline is not None:
        checked["budget"] = deadline.record()
    return {"roles": excluded, "kept_as": kept_as, f"linears_in_{kept_as}": sum(len(roles[r]) for r in excluded),
            "linears": sum(len(ops) for ops in roles.values()), "accepted": ok, "target_met": target_met,
            "search": search, **checked}


def _timed_once_per_write(attempt: Callable, speed: Callable[[], tuple]) -> tuple[Callable, Callable[[], tuple]]:
    """``attempt`` and ``speed`` sharing one timing per file written to the destination: the walk times each step it
    writes, and the stop rule (``speed_rule.settle``) would otherwise time the step the walk ended on again."""
    timed: dict[str, tuple] = {}

    def writing(float_roles, final, screen=False):
        if final:
            timed.clear()
        return attempt(float_roles, final, screen)

    def timing() -> tuple:
        if "destination" not in timed:
            timed["destination"] = speed()
        return timed["destination"]
    return writing, timing


def _walk(roles: dict[str, list], attempt: Callable, search: list, steps: list, stop_at_bar: bool,
          deadline: Deadline | None = None, speed: Callable[[], tuple] | None = None) -> bool:
    """Screen each role alone, then keep roles in float most helpful first, each step judged in full and
    appended to ``search`` and ``steps``, until a step meets the target (True) or, with ``stop_at_bar``, the
    bar; False when no step met the target, or when a step ran slower than the fp32 file (``speed``): a step
    with more Linears in float would not be faster, so no step after it can ship (``speed_rule``), and the
    walk stops there instead of judging them (NER demo, ONNX dynamic int8, AVX2: five steps, 46 s, to a
    target met only by a file slower than fp32)."""
    sensitivity = {}
    for role in roles:
        if deadline is not None and deadline.expired("screening the roles"):
            return False
        sensitivity[role] = attempt([role], False, screen=True)[1]
        search.append({"float_roles": [role], **sensitivity[role]})
    excluded: list[str] = []
    for role in sorted(roles, key=lambda r: sensitivity[r].get("cosine", 0.0), reverse=True):
        if deadline is not None and deadline.expired(f"step {len(excluded) + 1}"):
            return False
        excluded.append(role)
        ok, score = attempt(excluded, True)
        search.append({"float_roles": list(excluded), **score})
        steps.append((list(excluded), score))
        if speed is not None:
            fast, figures = speed()
            if not fast:
                search[-1]["too_slow"] = {"linears_in_float": sum(len(roles[r]) for r in excluded),
                                          **{k: figures[k] for k in ("latency_ms", "fp32_latency_ms")}}
                return False
        if ok or (stop_at_bar and score.get("meets_bar")):
            return ok
    return False


def _good_enough(steps: list[tuple[list[str], dict]], attempt: Callable) -> tuple[list[str], bool]:
    """Short of the target: the cheapest step meeting the bar, written again unless it is the last step
    (the destination holds the last one)."""
    good_enough = next((roles_ for roles_, score in steps if score.get("meets_bar")), None)
    if good_enough is None:
        return steps[-1][0], False
    if good_enough != steps[-1][0]:
        attempt(good_enough, True)
    return good_enough, True


def interleaved_latency_ms(runners: list[Runner], feeds: dict[str, np.ndarray], rounds: int = 30) -> list[float]:
    """Median latency of several runners measured in alternation, so that machine noise (other
    processes, frequency changes) hits all of them alike and their ratio is meaningful."""
    for runner in runners:
        for _ in range(3):
            runner(feeds)
    times: list[list[float]] = [[] for _ in runners]
    for _ in range(rounds):
        for i, runner in enumerate(runners):
            start = time.perf_counter()
            runner(feeds)
            times[i].append(time.perf_counter() - start)
    return [float(np.median(t) * 1000) for t in times]


def median_latency_ms(runner: Runner, feeds: dict[str, np.ndarray], runs: int = 30) -> float:
    return interleaved_latency_ms([runner], feeds, rounds=runs)[0]
