"""``pocketbert-bench latency``: every artifact of every bundle, and its peers, on the same inputs.

One configuration = runner × threads × sequence length × batch, measured in its own process
(:mod:`pocketbert.benchmarks.measure`).  Inputs are random token ids between [CLS] and [SEP] at exactly the
sequence length (no padding: every runner does the same work), written once per (vocabulary, length,
batch) and fed to every runner.  Bundles converted from the same checkpoint share one set of peers,
and speed-ups are only ever computed between records of the same run and the same model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pocketbert.runtime import machine

from . import schema
from .gemm_floor import GemmFloor, floor_precision
from .macs import gemms
from .measure import run_in_subprocess
from .models import describe_bundle
from .peers import Peer, PeerError, build, plain_bundle, source_checkpoint

BACKENDS = ("onnx", "tflite")
ORIGINAL = ("original", "plain-int8")  # variant names of a model's unmodified conversion
REFERENCES = {"vs_tflite_plain_fp32": "peer:tflite-plain-fp32", "vs_ort_optimum_fp32": "peer:ort-optimum-fp32"}


class LatencyError(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


@dataclass
class LatencySettings:
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    threads: list[int] = field(default_factory=lambda: [1, 2])
    seq_lens: list[int] = field(default_factory=lambda: [32, 64, 128, 256])
    batches: list[int] = field(default_factory=lambda: [1, 8])
    runs: int = 50
    warmup: int = 10
    peers: bool = False
    checkpoint: str | None = None
    floor: bool = True
    floor_seconds: float = 0.2
    max_seconds: float = 120.0  # per configuration, after min_runs; stops a slow model from taking an hour
    min_runs: int = 50
    rounds: int = 1  # each configuration's runs split over this many rounds, the runners taking turns
    fast: bool = False


def make_inputs(work_dir: Path, manifest: dict, seq: int, batch: int) -> Path:
    """Random ids at exactly ``seq`` tokens, [CLS] … [SEP], mask all ones; one file per vocab/seq/batch."""
    special = manifest["tokenizer"].get("special_tokens") or {}
    cls_id, sep_id = (special.get(k, {}).get("id", d) for k, d in (("cls", 101), ("sep", 102)))
    vocab = int(manifest.get("model_vocab_size") or manifest["tokenizer"]["vocab_size"])
    path = work_dir / "inputs" / f"v{vocab}-s{seq}-b{batch}.npz"
    if not path.is_file():
        rng = np.random.default_rng(seq * 1000 + batch)
        ids = rng.integers(min(1000, vocab // 2), vocab, size=(batch, seq), dtype=np.int64)
        ids[:, 0], ids[:, -1] = cls_id, sep_id
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids))
    return path


def _size(path: Path) -> int:
    if path.is_dir():  # a checkpoint: its weight files
        return sum(p.stat().st_size for p in path.iterdir() if p.suffix in (".safetensors", ".bin"))
    return path.stat().st_size


@dataclass
class _Runner:
    runner: str
    kind: str
    path: Path
    precision: str
    variant: str  # bundle | peer
    buckets: list[int] | None
    note: str = ""


def _bundle_runners(bundle, backends: list[str]) -> list[_Runner]:
    out = []
    for art in bundle.artifacts:
        if art.backend in backends and art.passed:
            out.append(_Runner(art.recipe, art.backend, art.path, art.precision, variant="bundle",
                               buckets=art.details.get("buckets") if art.backend == "tflite" else None))
    return out


def _peer_runners(peers: list[Peer], backends: list[str], buckets: list[int]) -> list[_Runner]:
    wanted = {"torch", *backends}
    return [_Runner(p.runner, p.kind, p.path, p.precision, variant="peer",
                    buckets=buckets if p.kind == "tflite" else None, note=p.note)
            for p in peers if p.kind in wanted]


def _load_config(checkpoint: Path | None):
    if checkpoint is None:
        return None
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(checkpoint))


def run(bundle_paths: list[Path], settings: LatencySettings, work_dir: Path, progress: Callable[[str], None] = print,
        advance: Callable[[int], None] | None = None) -> dict:
    """Measure everything; returns a results dict (schema :mod:`benchmarks.schema`)."""
    for backend in settings.backends:
        if backend not in BACKENDS:
            raise LatencyError(f"unknown backend {backend!r}", f"use {' or '.join(BACKENDS)} (comma-separated)")
    data = schema.new_file("latency", fast=settings.fast, machine=machine.describe(),
                           settings={k: v for k, v in settings.__dict__.items()})
    floor = GemmFloor(settings.floor_seconds)

    def original_first(item):  # the group holding the model's original comes first: it gets the peers
        return not any(describe_bundle(b.path, b.manifest).get("variant_name") in ORIGINAL for b in item[1])

    peers_done: set[str] = set()
    for _, bundles in sorted(_groups(bundle_paths).items(), key=original_first):
        # peers come from the group's plain bundle when there is one: its fp32 files are the plain exports
        first = next((b for b in bundles if plain_bundle(b.path, b.manifest, settings.seq_lens)), bundles[0])
        info = describe_bundle(first.path, first.manifest)
        config, runners = _group_runners(first, bundles, info, settings, work_dir=work_dir, peers_done=peers_done,
                                         progress=progress)
        # Configuration outside, runner inside: the records a ratio compares are measured minutes apart,
        # not an hour apart, so a drifting background load biases them less.
        for threads in settings.threads:
            for seq in settings.seq_lens:
                for batch in settings.batches:
                    for record in _measure_in_rounds(first, runners, info, config, shape=(threads, seq, batch),
                                                     settings=settings, work_dir=work_dir, floor=floor):
                        data["results"].append(record)
                        if advance:
                            advance(1)
                        _say(progress, record)
    data["gemm_floor"] = floor.to_json()
    data["machine"]["load_average_end"] = machine.load_average()
    add_ratios(data["results"])
    return data


def _groups(bundle_paths: list[Path]) -> dict[str, list]:
    """Bundles by source checkpoint: one set of peers, MAC count and floor per group."""
    from pocketbert import runtime
    from pocketbert.runtime.errors import BundleError

    groups: dict[str, list] = {}
    for path in bundle_paths:
        try:
            bundle = runtime.Bundle.open(path)
            for art in bundle.artifacts:  # size and SHA-256, as runtime.load checks them: never time a damaged file
                if art.passed:
                    bundle.file(art.file, entry="artifact file")
        except BundleError as exc:
            raise LatencyError(exc.problem, exc.fix) from exc
        key = str((bundle.manifest.get("source") or {}).get("checkpoint") or path)
        groups.setdefault(key, []).append(bundle)
    return groups


def _group_runners(first, bundles: list, info: dict, settings: LatencySettings, work_dir: Path, peers_done: set[str],
                   progress) -> tuple[object, list[tuple[object, _Runner]]]:
    """(model config for MACs, [(bundle or None for a peer, runner)]) of one group of bundles."""
    checkpoint = None
    try:
        checkpoint = source_checkpoint(first.manifest, settings.checkpoint)
    except PeerError as exc:
        if settings.peers:
            raise LatencyError(exc.problem, exc.fix) from exc
        progress(f"  {info['model']}: no source checkpoint, so no MAC count or GEMM floor ({exc.problem})")
    runners: list[tuple[object, _Runner]] = []
    for bundle in bundles:
        runners += [(bundle, r) for r in _bundle_runners(bundle, settings.backends)]
    # One set of peers per model: a recovered checkpoint of the same model is compared with what users
    # would otherwise pick for the original, not with itself in PyTorch.
    if settings.peers and info["model"] not in peers_done:
        peers_done.add(info["model"])
        try:
            peers = build(first.path, first.manifest, settings.seq_lens, work_dir, checkpoint=settings.checkpoint,
                          log=progress, tflite="tflite" in settings.backends)
        except PeerError as exc:
            raise LatencyError(exc.problem, exc.fix) from exc
        runners += [(None, r) for r in _peer_runners(peers, settings.backends, settings.seq_lens)]
    return _load_config(checkpoint), runners


def _measure_in_rounds(first, runners: list, info: dict, config, shape: tuple[int, int, int], settings: LatencySettings,
                       work_dir: Path, floor: GemmFloor) -> list[dict]:
    """One record per runner; with ``rounds`` > 1 the runners take turns, a share of the runs each turn.

    Runners of one configuration measured one after another see whatever the machine does meanwhile;
    taking turns spreads a drifting background load over all of them, so their ratios stay fair.
    """
    threads, seq, batch = shape
    rounds = max(1, settings.rounds)
    share = replace(settings, runs=-(-settings.runs // rounds), min_runs=-(-settings.min_runs // rounds),
                    max_seconds=settings.max_seconds / rounds)
    records: list[dict | None] = [None] * len(runners)
    for _ in range(rounds):
        for i, (bundle, r) in enumerate(runners):
            if records[i] is not None and (records[i]["skipped"] or records[i]["timed"] is None):
                continue
            record = _measure_one(first, bundle, r, info, config=config, threads=threads, seq=seq, batch=batch,
                                  settings=share, work_dir=work_dir, floor=floor)
            records[i] = record if records[i] is None else _merged(records[i], record)
    for record in records:
        record["rounds"] = rounds
        times = record.pop("times_ms", None)
        if times:
            record["timed"] = schema.summarize(times)
            _add_floor_fraction(record)
    return records


def _merged(earlier: dict, later: dict) -> dict:
    """The runs of two turns of one runner as one record (the first turn's load and start-up figures)."""
    if later["skipped"]:
        return later
    earlier["times_ms"] = earlier["times_ms"] + later["times_ms"]
    earlier["peak_rss_mb"] = max(earlier["peak_rss_mb"], later["peak_rss_mb"])
    return earlier


def _add_floor_fraction(record: dict) -> None:
    if record.get("floor"):
        record["floor"]["fraction"] = record["floor"]["ms"] / record["timed"]["p50_ms"]


def count_configurations(bundle_paths: list[Path], settings: LatencySettings) -> int:
    from pocketbert import runtime

    n = 0
    models = set()  # one set of peers per model
    for path in bundle_paths:
        bundle = runtime.Bundle.open(path)
        n += len(_bundle_runners(bundle, settings.backends))
        models.add(describe_bundle(bundle.path, bundle.manifest)["model"])
    if settings.peers:  # torch eager, plus the ONNX pair and the TFLite peer when those backends are asked for
        n += len(models) * (1 + 2 * ("onnx" in settings.backends) + ("tflite" in settings.backends))
    return n * len(settings.threads) * len(settings.seq_lens) * len(settings.batches)


def _say(progress, record) -> None:
    where = f"{record['model']} {record['runner']}{' +' + record['opts'] if record.get('opts') else ''} " \
            f"t{record['threads']} s{record['seq_len']} b{record['batch']}"
    if record["skipped"]:
        progress(f"  {where}: skipped ({record['skipped']})")
    else:
        fraction = (record.get("floor") or {}).get("fraction")
        progress(f"  {where}: p50 {record['timed']['p50_ms']:.2f} ms"
                 + (f", {fraction:.0%} of the GEMM floor" if fraction else ""))


def _measure_one(first, bundle, r: _Runner, info: dict, config, threads: int, seq: int, batch: int,
                 settings: LatencySettings, work_dir: Path, floor: GemmFloor) -> dict:
    manifest = first.manifest
    opts = [o for o in (bundle.manifest.get("opts") if bundle else []) or [] if o != "int8"]
    if bundle is not None:  # the bundle's own variant name; peers belong to the model, not to a variant
        info = describe_bundle(bundle.path, bundle.manifest)
    else:
        info = {**info, "variant_name": None}
    record = {**info, "bundle": str(bundle.path) if bundle else None, "variant": r.variant, "runner": r.runner,
              "opts": ",".join(opts), "backend": r.kind, "precision": r.precision, "threads": threads,
              "seq_len": seq, "batch": batch, "where": "desktop", "init_ms": None, "first_ms": None,
              "warmup": None, "timed": None, "peak_rss_mb": None, "rss_before_load_mb": None,
              "size_bytes": _size(r.path), "macs": None, "floor": None, "skipped": None,
              "notes": [r.note] if r.note else []}
    if r.kind == "tflite" and batch > 1:
        record["notes"].append(f"TFLite runs batch 1: the {batch} rows run one after another")
    if r.buckets is not None and seq not in r.buckets:
        record["skipped"] = f"no seq_{seq} signature (buckets {r.buckets}); convert with --buckets including {seq}"
        return record
    if seq > manifest["max_sequence_length"]:
        record["skipped"] = f"longer than the model's maximum ({manifest['max_sequence_length']})"
        return record
    inputs = make_inputs(work_dir, manifest, seq, batch)
    spec = {"kind": r.kind, "path": str(r.path), "threads": threads, "seq_len": seq, "batch": batch,
            "runs": settings.runs, "warmup": settings.warmup, "inputs": str(inputs),
            "task": manifest["task"], "num_labels": len(manifest["labels"]), "max_seconds": settings.max_seconds,
            "min_runs": settings.min_runs}
    result = run_in_subprocess(spec)
    if "error" in result:
        record["skipped"] = f"failed: {result['error']}"
        return record
    record.update(init_ms=result["init_ms"], first_ms=result["first_ms"], warmup=result["warmup"],
                  timed=schema.summarize(result["times_ms"]), times_ms=result["times_ms"],
                  peak_rss_mb=result["peak_rss_mb"], rss_before_load_mb=result["rss_before_load_mb"])
    if config is not None:
        products = gemms(config, seq, batch, manifest["task"], labels=len(manifest["labels"]))
        record["macs"] = sum(g.macs for g in products)
        if settings.floor:
            f = floor.floor(products, floor_precision(r.precision), threads)
            record["floor"] = {"precision": f["precision"], "ms": f["ms"], "gmacs_per_s": f["gmacs_per_s"]}
            _add_floor_fraction(record)
    return record


def add_ratios(records: list[dict]) -> None:
    """Speed-up (reference / own, p50 or mean) against each reference of the same model, configuration and place.

    The plain fp32 TFLite reference is the peer when measured, else the bundle's own ``tflite:fp32`` of a
    bundle converted without ``--opt`` (the same file: on a phone, where peers are not run).
    """
    def key(r, runner):
        return (r["model"], runner, r["threads"], r["seq_len"], r["batch"], r.get("where"), r.get("delegate"))

    index = {}
    for r in records:
        if r.get("skipped"):
            continue
        if r.get("variant") == "peer":
            index[key(r, r["runner"])] = r
        elif r["runner"] == "tflite:fp32" and not r.get("opts"):
            index.setdefault(key(r, "peer:tflite-plain-fp32"), r)
    for r in records:
        if r.get("skipped"):
            continue
        ratios = {}
        for name, ref in REFERENCES.items():
            other = index.get(key(r, ref))
            if other:
                ratios[name] = schema.typical_ms(other) / schema.typical_ms(r)
        r["speedup"] = ratios
