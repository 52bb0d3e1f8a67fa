"""The staged conversion pipeline: load -> transform -> export -> quantize -> verify -> bundle.

Each stage lives in its own module; this one wires them together, times them, measures what every
transform changed and refuses to emit a model that does not compute what it should.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from pocketbert.runtime import machine
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.errors import BundleError

from . import __version__, backends, loading, verify
from . import texts as textdata
from .bundle import SCHEMA_VERSION, Staging, write_manifest
from .encoding import encode
from .errors import AccuracyLossRefused, InputError, OutputError, VerificationError
from .logits_model import LogitsModel
from .opts import BY_NAME as OPT_BY_NAME
from .opts import Opts, parse_opts
from .quantization import QuantizeStage
from .recipes import INT8_CHOICES, Choice, Recipe, parse_formats, parse_recipes, select
from .transforms import TRANSFORMS, TransformReport
from .transforms.smoothquant import DEFAULT_ALPHA

LATENCY_SEQ = 128

CALIBRATION_BATCH = 16  # texts per calibration batch, each padded to 64 tokens (static shapes)


@dataclass
class ConvertOptions:
    checkpoint: str
    out: Path
    task: str | None = None
    opts: str | None = None
    labels: list[str] | None = None
    num_labels: int | None = None
    int8: str = "auto"  # auto | dynamic | static | all
    formats: str | None = None  # comma-separated: onnx, tflite; None: tflite,onnx (or the --recipe backends)
    recipes: str | None = None  # comma-separated recipe names (e.g. tflite:fp16), instead of --opt int8/--int8
    buckets: list[int] | None = None  # TFLite sequence-length buckets; default 32, 64, 128, 256 up to the max
    calibration: Path | None = None
    calibration_samples: int = 256
    verify_samples: int = 1000
    data_dir: Path | None = None
    max_length: int | None = None
    overwrite: bool = False
    allow_accuracy_loss: bool = False
    seed: int = 0
    threads: int = 2
    int8_min_cosine: float = verify.INT8_MIN_COSINE
    int8_min_agreement: float = verify.INT8_MIN_AGREEMENT
    int8_target_agreement: float = verify.INT8_TARGET_AGREEMENT
    smooth_alpha: float | None = DEFAULT_ALPHA  # None: never smooth
    measure_latency: bool = True
    # accuracy recovery (converter.training.recovery): a task name or training file, and its settings
    recover: str | None = None
    recover_options: dict = field(default_factory=dict)  # RecoverOptions fields: budget, schedule, lr, …
    max_accuracy_drop: float = 1.0  # points of the task metric a recovered model may lose against its teacher


@dataclass
class ArtifactResult:
    recipe: str
    file: str
    bytes: int
    verification: dict
    passed: bool
    latency_ms: float | None = None
    seconds: float = 0.0
    details: dict = field(default_factory=dict)


@dataclass
class ConvertResult:
    bundle: Path
    manifest: dict
    artifacts: list[ArtifactResult]
    stage_seconds: dict[str, float]
    notes: list[str]


class Reporter:
    """Progress sink; the CLI's implementation draws spinners, tests use this silent one.  Messages are
    plain text holding user values (paths, labels, task names): a reporter prints them as they are."""

    @contextlib.contextmanager
    def stage(self, name: str, description: str) -> Iterator[None]:
        yield

    def info(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


def _full_row(feeds: dict) -> dict:
    """A timing input of ``length`` attended tokens: the runtime's dynamic int8 runs each row without its
    padding, so a padded row would time a 3-token input under a 128-token label."""
    return {**feeds, "attention_mask": np.ones_like(feeds["attention_mask"])}


def _sorted_by_length(items: list) -> list:
    return sorted(items, key=lambda t: len(t) if isinstance(t, str) else len(t[0]) + len(t[1]))


def _tokenizer_settings(tokenizer, max_length: int) -> dict:
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    normalizer = state.get("normalizer") or {}
    model = state.get("model") or {}
    lowercase = normalizer.get("lowercase")
    strip_accents = normalizer.get("strip_accents")
    return {
        "type": model.get("type", "unknown").lower(),
        "vocab_file": "vocab.txt",
        "tokenizer_file": "tokenizer.json",
        "vocab_size": len(tokenizer),
        "do_lower_case": bool(lowercase),
        # BERT semantics: strip_accents=None means "follow lower-casing"
        "strip_accents": bool(lowercase if strip_accents is None else strip_accents),
        "clean_text": bool(normalizer.get("clean_text", True)),
        "tokenize_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
        "continuing_subword_prefix": model.get("continuing_subword_prefix", "##"),
        "max_input_chars_per_word": model.get("max_input_chars_per_word", 100),
        "special_tokens": {name: {"token": getattr(tokenizer, f"{name}_token"),
                                  "id": getattr(tokenizer, f"{name}_token_id")}
                           for name in ("unk", "cls", "sep", "pad", "mask")
                           if getattr(tokenizer, f"{name}_token", None) is not None},
        "max_sequence_length": max_length,
    }


def _max_length(loaded: loading.Loaded, requested: int | None) -> int:
    positions = loaded.family.max_positions(loaded.config)
    tokenizer_max = loaded.tokenizer.model_max_length
    natural = min(positions, tokenizer_max) if tokenizer_max and tokenizer_max < 1_000_000 else positions
    if requested is None:
        return natural
    if requested < 8 or requested > positions:
        raise InputError(f"--max-length {requested} is outside 8..{positions} (the model's position embeddings)",
                         f"choose a value between 8 and {positions}")
    return requested


DEFAULT_BUCKETS = (32, 64, 128, 256)


def _buckets(requested: list[int] | None, max_length: int) -> list[int]:
    """TFLite sequence-length buckets: the requested ones, else the defaults up to the max length."""
    if requested:
        too_long = [b for b in requested if b > max_length or b < 2]
        if too_long:
            raise InputError(f"--buckets {','.join(map(str, too_long))} outside 2..{max_length} "
                             "(the model's maximum sequence length)", f"use buckets up to {max_length}")
        return sorted(set(requested))
    return [b for b in DEFAULT_BUCKETS if b <= max_length] or [max_length]


def _write_tokenizer(tokenizer, directory: Path, max_length: int) -> None:
    # tokenizer.json for `tokenizers` (the runtime), tokenizer_config.json so that transformers'
    # AutoTokenizer loads the bundle as the same class, vocab.txt for plain WordPiece (Android).
    tokenizer.save_pretrained(directory)
    # A checkpoint's tokenizer.json can carry fixed truncation/padding (e.g. pad everything to 128),
    # which Tokenizer.from_file would silently apply; the bundle's length limit is max_length.
    fast = directory / "tokenizer.json"
    if fast.exists():
        state = json.loads(fast.read_text(encoding="utf-8"))
        state["truncation"] = state["padding"] = None
        fast.write_text(json.dumps(state, ensure_ascii=False, indent=2), encoding="utf-8")
    config = directory / "tokenizer_config.json"
    if config.exists():
        state = json.loads(config.read_text(encoding="utf-8"))
        state["model_max_length"] = max_length
        config.write_text(json.dumps(state, ensure_ascii=False, indent=2), encoding="utf-8")
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    (directory / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")


def _damage_message(comparison: verify.Comparison, changed: list[TransformReport],
                    recovered: dict | None = None) -> str:
    names = ",".join(r.name for r in changed)
    figures = (f"top-1 agreement with the original {comparison.top1_agreement:.1%}, logit cosine "
               f"{comparison.cosine:.4f}, relative logit drift {comparison.rel_drift:.1%}, max |Δlogit| "
               f"{comparison.max_abs:.3g}")
    if recovered is None:
        return f"{names} changed what the model computes: on real sentences, {figures}"
    metric, scores = recovered["metric"], recovered["dev_scores"]
    return (f"{names} after recovery on {recovered['task']}: dev {metric} {scores['recovered'][metric]:.2f} vs "
            f"teacher {scores['teacher'][metric]:.2f} ({recovered['delta_vs_teacher']:+.2f} points; without "
            f"recovery {scores['without_recovery'][metric]:.2f}); on real sentences, {figures}")


def _backends(plan: list[Recipe | Choice]) -> set[str]:
    return {r.candidates[0].backend if isinstance(r, Choice) else r.backend for r in plan}


def _check_options(options: ConvertOptions) -> tuple[list[str], list[Recipe | Choice], list | None, Path | None]:
    """Option and calibration-file checks that need no model: they fail in a second."""
    opts = parse_opts(options.opts)
    if isinstance(options.threads, bool) or not isinstance(options.threads, int) or options.threads < 1:
        raise InputError(f"--threads {options.threads!r}: it must be a whole number ≥ 1", "pass e.g. --threads 2")
    textdata.data_dir(options.data_dir)  # an explicit --data-dir that does not exist fails here, not after export
    if options.int8 not in INT8_CHOICES:
        raise InputError(f"unknown --int8 {options.int8!r}", f"use one of {', '.join(INT8_CHOICES)}")
    if not opts.quantizes and options.int8 != "auto":
        raise InputError(f"--int8 {options.int8} was given but --opt has no int8", "add int8 to --opt")
    named = parse_recipes(options.recipes)
    if named:
        given = {"--opt int8": opts.quantizes, f"--int8 {options.int8}": options.int8 != "auto",
                 "--format": options.formats is not None}
        clash = [flag for flag, present in given.items() if present]
        if clash:
            raise InputError(f"--recipe and {' and '.join(clash)} both choose what to build",
                             "name every recipe with --recipe (e.g. --recipe tflite:int8-static,onnx:int8-dynamic), "
                             "or use --opt int8 --int8 … --format …")
    formats = parse_formats(options.formats)
    plan = select(opts, options.int8, formats, named)
    backends_planned = _backends(plan)
    int8_planned = any(isinstance(r, Choice) or r.kind == "int8" for r in plan)
    if options.buckets and "tflite" not in backends_planned:
        raise InputError("--buckets was given but nothing is exported to tflite; only TFLite has static sequence "
                         "buckets", "add tflite to --format, or drop --buckets")
    if options.calibration is not None and not int8_planned:
        raise InputError("--calibration was given but no int8 recipe is built; only int8 uses calibration text",
                         "add int8 to --opt (or an int8 --recipe), or drop --calibration")
    calibration_texts = calibration_source = None
    checkpoint_dir, _ = loading.resolve(options.checkpoint)
    if int8_planned:
        calibration_source = options.calibration or _task_text(checkpoint_dir, options.data_dir)
        texts = textdata.read_texts(calibration_source or textdata.BUILTIN_CALIBRATION, what="calibration")
        # evenly spread over the file: training files are often sorted (by document, by length)
        step = max(1, len(texts) // options.calibration_samples)
        calibration_texts = texts[::step][: options.calibration_samples]
    if checkpoint_dir.exists() and checkpoint_dir.resolve().is_relative_to(Path(options.out).resolve()):
        raise OutputError(f"--out {str(options.out)!r} is, or contains, the checkpoint being converted",
                          "choose an --out path outside the checkpoint directory")
    return opts, plan, calibration_texts, calibration_source


def _task_text(checkpoint_dir: Path, data_dir) -> Path | None:
    """Default calibration text of a PocketBERT-trained checkpoint: its task's training split, when the
    data directory has it (text like the model's inputs calibrates better than generic sentences)."""
    record = _training_record(checkpoint_dir)
    if not record or not record.get("task"):
        return None
    from .data.tasks import resolve_task

    try:
        path = resolve_task(record["task"], "train", data_dir)[1]
    except InputError:
        return None
    return path if path.is_file() else None


def _change(loaded: loading.Loaded, model: LogitsModel, opts: Opts, verify_batches: list):
    """Apply nonorm/relu; returns their reports, the untransformed original (when something changed;
    the teacher for recovery) and the damage measured against it on real sentences."""
    changing = opts.changing
    if not changing:
        return [], None, None
    original = copy.deepcopy(model)
    reports = [TRANSFORMS[name](loaded.model, loaded.family) for name in changing]
    if all(r.noop for r in reports):
        return reports, None, None
    damage = verify.compare(verify.torch_logits(original, verify_batches), verify.torch_logits(model, verify_batches),
                            [b["attention_mask"] for b in verify_batches])
    return reports, original, damage


def _accept(damage: verify.Comparison, reports: list[TransformReport], recovered: dict | None,
            options: ConvertOptions, reporter: Reporter, notes: list[str]) -> None:
    """Refuse a model nonorm/relu degraded, unless recovery won the accuracy back or the loss is accepted."""
    message = _damage_message(damage, [r for r in reports if not r.noop], recovered)
    if recovered and -recovered["delta_vs_teacher"] <= options.max_accuracy_drop:
        reporter.info(message)
        return
    if not options.allow_accuracy_loss:
        if recovered:
            message += f": more than --max-accuracy-drop {options.max_accuracy_drop:g} points"
            fix = "recover longer (--recover-budget), or pass --allow-accuracy-loss to accept it"
        else:
            fix = ("recover it by distillation with --recover TASK (e.g. --recover glue:sst2), or pass "
                   "--allow-accuracy-loss to accept it, or drop nonorm/relu")
        raise AccuracyLossRefused(message + "; refusing to write a silently degraded model", fix)
    reporter.warn(message + " (accepted: --allow-accuracy-loss)")
    notes.append(message)


def _exact(name: str, loaded: loading.Loaded, model: LogitsModel, verify_batches: list,
           parity_batches: list) -> TransformReport:
    """An exact rewrite (fold: NoNorm γ/β into neighbouring layers), checked on real and fixed inputs."""
    check = parity_batches + verify_batches[:8]
    expect = verify.torch_logits(model, check)  # before the rewrite
    report = TRANSFORMS[name](loaded.model, loaded.family)
    change = verify.compare(expect, verify.torch_logits(model, check), [b["attention_mask"] for b in check])
    tolerance = verify.fp32_tolerance(expect)
    report.details.append(f"{OPT_BY_NAME[name].compared}: max |Δlogit| {change.max_abs:.3g} "
                          f"(tolerance {tolerance:.3g})")
    if change.max_abs > tolerance:
        raise VerificationError(f"{name} changed the model: max |Δlogit| {change.max_abs:.3g} > {tolerance:.3g}",
                                f"report this as a bug; convert without {name}")
    return report


def convert(options: ConvertOptions, reporter: Reporter | None = None) -> ConvertResult:
    reporter = reporter or Reporter()
    opts, recipes, calibration_texts, calibration_source = _check_options(options)
    staging = Staging(options.out, options.overwrite)
    timings: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(name: str, description: str):
        start = time.perf_counter()
        with reporter.stage(name, description):
            yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    with stage("load", "Loading checkpoint"):
        loaded = loading.load(options.checkpoint, task=options.task, labels=options.labels,
                              num_labels=options.num_labels, seed=options.seed)
        torch.set_num_threads(max(1, options.threads))
    notes = list(loaded.notes)
    for note in loaded.notes:
        reporter.warn(note)
    family, tokenizer = loaded.family, loaded.tokenizer
    max_length = _max_length(loaded, options.max_length)
    buckets = _buckets(options.buckets, max_length)
    # Inputs every artifact can take: static-shape formats stop at their largest bucket.
    verify_length = min(max_length, max(buckets)) if "tflite" in _backends(recipes) else max_length
    input_names = ["input_ids", "attention_mask"] + (["token_type_ids"] if family.uses_token_type_ids else [])

    def encode_fn(batch, max_length=verify_length, pad_to=None):
        return encode(tokenizer, batch, input_names=input_names, max_length=max_length, pad_to=pad_to)

    def make_batches(items, batch_size=32, pad_to=None):
        return [encode_fn(items[i:i + batch_size], pad_to=pad_to) for i in range(0, len(items), batch_size)]

    verify_texts, verify_source = textdata.default_verify_texts(loaded.task, textdata.data_dir(options.data_dir))
    verify_texts = _sorted_by_length(verify_texts[: options.verify_samples])
    verify_batches = make_batches(verify_texts)
    verify_masks = [b["attention_mask"] for b in verify_batches]
    if verify_source.startswith("built-in"):
        notes.append("no data directory found: verification used the built-in English sentences "
                     "(set --data-dir or $POCKETBERT_DATA for the task's dev set)")
    parity_batches = verify.parity_inputs(encode_fn, verify_texts, max_length=verify_length, vocab_size=len(tokenizer),
                                          special_ids=[tokenizer.cls_token_id, tokenizer.sep_token_id])
    parity_masks = [b["attention_mask"] for b in parity_batches]

    recovery = _prepare_recovery(options, loaded, opts, tuple(input_names), max_length)
    model = LogitsModel(loaded.model, input_names).eval()
    with stage("transform", "Applying optimisations"):
        reports, original, damage = _change(loaded, model, opts, verify_batches)
    recovered = None
    if original is not None:
        if recovery is not None:
            from .training import recovery as recovery_job

            start = time.perf_counter()  # no spinner: the training loop draws its own progress
            reporter.info(f"Recovering accuracy by distillation on {options.recover} "
                          f"({recovery.options.budget.describe()})")
            recovered = recovery_job.run(recovery, original.model, loaded.model, family, log=reporter.info)
            recovered["transform_damage_before_recovery"] = damage.to_json()
            damage = verify.compare(verify.torch_logits(original, verify_batches),
                                    verify.torch_logits(model, verify_batches), verify_masks)
            timings["recover"] = time.perf_counter() - start
        del original
        _accept(damage, reports, recovered, options, reporter, notes)
    for name in opts.exact:
        with stage("transform", OPT_BY_NAME[name].action):
            reports.append(_exact(name, loaded, model, verify_batches, parity_batches))

    parity_ref = verify.torch_logits(model, parity_batches)
    verify_ref = verify.torch_logits(model, verify_batches)
    spec = backends.ExportSpec(model=model, family=family, input_names=input_names, output_name="logits",
                               max_length=max_length, make_batches=make_batches, threads=options.threads,
                               buckets=buckets)
    latency_feeds = _full_row(encode_fn(["x"], pad_to=min(LATENCY_SEQ, verify_length)))

    results: list[ArtifactResult] = []
    quantizer = None
    if any(isinstance(r, Choice) or r.quantized for r in recipes):
        # Whole batches only: ONNX Runtime's calibrator stacks every batch's activations into one array, and a
        # shorter last batch crashed it (--calibration-samples 1000: 62 batches of 16 and one of 8).
        if len(calibration_texts or []) > CALIBRATION_BATCH:
            calibration_texts = calibration_texts[: len(calibration_texts) // CALIBRATION_BATCH * CALIBRATION_BATCH]
        calibration = make_batches(calibration_texts or [], batch_size=CALIBRATION_BATCH,
                                   pad_to=min(64, verify_length))
        quantizer = QuantizeStage(loaded, spec, calibration, verify.torch_logits(model, calibration),
                                  options.threads, options.int8_min_cosine, options.int8_min_agreement,
                                  options.smooth_alpha, options.int8_target_agreement)
    with staging:
        # tokenizer and labels first: TFLite artifacts embed vocab.txt and labels.txt as metadata
        _write_tokenizer(tokenizer, staging.path, verify_length)
        tokenizer_settings = _tokenizer_settings(tokenizer, max_length)
        (staging.path / "labels.txt").write_text("".join(f"{label}\n" for label in loaded.labels), encoding="utf-8")
        staging.reserve(*_space_estimate(loaded.model, recipes))
        for planned in recipes:
            start = time.perf_counter()
            if isinstance(planned, Choice):
                with stage("quantize", f"Choosing {planned.name} ({', '.join(r.name for r in planned.candidates)})"):
                    recipe, artifact = quantizer.choose(planned, staging.path, latency_feeds)
                    reporter.info("  " + _selection_line(artifact.details["selection"]))
            elif not planned.quantized:
                recipe = planned
                with stage("export", f"Exporting {recipe.name}"):
                    artifact = backends.get(recipe.backend).export(spec, staging.path / _filename(recipe))
                    # the plain float export can be quantised as it is (not after graph fusion)
                    if quantizer and not artifact.details.get("graph_optimization", {}).get("applied"):
                        quantizer.float_exports[recipe.backend] = artifact.path
            else:
                recipe = planned
                with stage("quantize", f"Quantising {recipe.name}"):
                    artifact = quantizer.build(recipe, staging.path / _filename(recipe))
            if recipe.backend == "tflite":
                # last, after quantising: the quantiser drops metadata (see tflite_metadata)
                artifact.details["metadata"] = _embed_metadata(artifact.path, loaded, input_names, staging.path,
                                                               tokenizer_settings["do_lower_case"])
            fallback = artifact.details.get("float_fallback") or {}
            if fallback.get("roles"):
                reporter.warn(f"{recipe.name}: {fallback['linears_in_float']} of {fallback['linears']} "
                              f"Linear layers kept in float for accuracy: {', '.join(fallback['roles'])}")
            if fallback.get("accepted") and not fallback.get("target_met", True):
                best = max(s["top1_agreement"] for s in fallback["search"])
                reporter.warn(f"{recipe.name}: the int8 target (top-1 agreement ≥ {options.int8_target_agreement:.1%} "
                              f"on calibration text) was not reached (best {best:.1%}); shipping the cheapest "
                              "attempt that meets the bar")
            if recipe.kind == "int8":
                artifact.details.update(calibration_source=textdata.describe(calibration_source),
                                        calibration_texts=len(calibration_texts))
            with stage("verify", f"Verifying {recipe.name}"):
                backend = backends.get(recipe.backend)
                runner = backend.load(artifact.path, input_names, recipe.precision, threads=options.threads)
                result = _verify(recipe, runner, artifact, artifact.path, parity_batches, parity_ref, parity_masks,
                                 verify_batches, verify_ref, verify_masks, options)
                result.seconds = time.perf_counter() - start
                report = reporter.info if result.verification["passed"] else reporter.warn
                report(f"  {recipe.name}: {_figures_line(result.verification)}")
                if options.measure_latency:
                    result.latency_ms = backends.median_latency_ms(runner, latency_feeds)
                results.append(result)
        failed = [r for r in results if not r.passed]
        if failed:
            lines = "; ".join(f"{r.recipe}: {r.verification['failure']}" for r in failed)
            raise VerificationError(f"verification failed, no bundle written: {lines}",
                                    "see the figures above; for int8 try --int8 dynamic, --calibration with "
                                    "text like your inputs, or convert without int8")
        with stage("bundle", "Writing bundle"):
            manifest = _manifest(options, loaded, opts, reports, damage, results, max_length, input_names,
                                 tokenizer_settings, verify_source, len(verify_texts), notes)
            manifest["recovery"] = recovered
            manifest["verification"]["max_length"] = verify_length
            for entry in manifest["artifacts"]:
                if entry["latency_ms"]:
                    entry["latency_ms"]["sequence"] = int(latency_feeds["input_ids"].shape[1])
            manifest["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            manifest["stage_seconds"] = {k: round(v, 2) for k, v in timings.items()}
            write_manifest(staging.path, manifest)
            _readable_by_the_runtime(staging.path)
            bundle = staging.commit()
    return ConvertResult(bundle=bundle, manifest=manifest, artifacts=results, stage_seconds=timings, notes=notes)


# Model file size relative to the float32 weights, per precision (int8 keeps some layers in float).
SIZE_VS_FP32 = {"fp32": 1.0, "fp16": 0.5}


def _space_estimate(model, recipes) -> tuple[int, str]:
    """Bytes the model files of ``recipes`` take, roughly: every int8 candidate is built, then one kept."""
    weights = sum(p.numel() * 4 for p in model.parameters())
    built = [r for planned in recipes for r in (planned.candidates if isinstance(planned, Choice) else [planned])]
    fraction = sum(SIZE_VS_FP32.get(r.precision, 0.5) for r in built)
    return int(weights * fraction), (f"{len(built)} model file(s) made from {weights / 1e6:.1f} MB of float32 "
                                     "weights")


def _readable_by_the_runtime(directory: Path) -> None:
    """The bundle as every reader will open it: a manifest the runtime refuses is never shipped."""
    try:
        Bundle.open(directory)
    except BundleError as exc:
        raise VerificationError(f"the runtime refuses the bundle the converter wrote: {exc.problem}",
                                "please report it: the converter and the runtime disagree on the bundle "
                                "contract") from exc


def _prepare_recovery(options: ConvertOptions, loaded: loading.Loaded, opts: Opts, input_names: tuple,
                      max_length: int):
    """--recover: read and check the task data, labels and budget before any slow work."""
    if not options.recover:
        return None
    if not opts.changing:
        raise InputError("--recover was given but --opt has neither nonorm nor relu: there is nothing to recover",
                         "add nonorm,relu to --opt, or drop --recover")
    if loaded.head_initialized:
        raise InputError("--recover needs a trained task head to recover towards; this checkpoint's head is fresh",
                         f"fine-tune it first: python -m converter finetune {options.checkpoint} --task "
                         f"{options.recover}")
    from .training import recovery as recovery_job

    settings = dict(options.recover_options)
    settings.setdefault("data_dir", options.data_dir)
    settings.setdefault("budget", recovery_job.DEFAULT_BUDGET)
    job = recovery_job.RecoverOptions(task=options.recover, **settings)
    return recovery_job.prepare(job, task_kind=loaded.task, tokenizer=loaded.tokenizer, labels=loaded.labels,
                                input_names=input_names, eval_length=min(512, max_length))


def _verify(recipe: Recipe, runner, artifact, path: Path, parity_batches, parity_ref, parity_masks,
            verify_batches, verify_ref, verify_masks, options: ConvertOptions) -> ArtifactResult:
    real = verify.compare(verify_ref, verify.runner_logits(runner, verify_batches), verify_masks)
    figures: dict = {"real_sentences": real.to_json()}
    if recipe.kind in ("fp32", "fp16"):
        fixed = verify.compare(parity_ref, verify.runner_logits(runner, parity_batches), parity_masks)
        tolerance = (verify.fp32_tolerance if recipe.kind == "fp32" else verify.fp16_tolerance)(parity_ref)
        figures.update(fixed_inputs=fixed.to_json(), tolerance={"max_abs": tolerance})
        passed = fixed.max_abs <= tolerance and real.max_abs <= tolerance
        if not passed:
            figures["failure"] = f"max |Δlogit| {max(fixed.max_abs, real.max_abs):.3g} > {tolerance:.3g}"
        if recipe.kind == "fp16":
            figures["tolerance"]["min_cosine"] = verify.FP16_MIN_COSINE
            if min(fixed.cosine, real.cosine) < verify.FP16_MIN_COSINE:
                passed = False
                figures["failure"] = (f"cosine {min(fixed.cosine, real.cosine):.6f} < {verify.FP16_MIN_COSINE}; "
                                      + figures.get("failure", ""))
    else:
        figures["tolerance"] = {"min_cosine": options.int8_min_cosine, "min_top1_agreement": options.int8_min_agreement,
                                "ladder_target_top1_agreement": options.int8_target_agreement}
        passed = real.cosine >= options.int8_min_cosine and real.top1_agreement >= options.int8_min_agreement
        if not passed:
            figures["failure"] = (f"cosine {real.cosine:.4f} (needs ≥ {options.int8_min_cosine}), top-1 agreement "
                                  f"{real.top1_agreement:.1%} (needs ≥ {options.int8_min_agreement:.0%})")
    figures["passed"] = passed
    return ArtifactResult(recipe=recipe.name, file=path.name, bytes=path.stat().st_size, verification=figures,
                          passed=passed, details=artifact.details)


def _embed_metadata(path: Path, loaded: loading.Loaded, input_names: list[str], directory: Path,
                    do_lower_case: bool) -> dict:
    """Labels, vocabulary and tokenizer options inside the .tflite (the TFLite metadata schema), so
    that Task-Library-style consumers (MediaPipe TextClassifier) run it on raw text."""
    from .backends import tflite_metadata

    source = loaded.builtin or Path(loaded.checkpoint).name
    return tflite_metadata.embed(path, task=loaded.task, labels=loaded.labels, vocab_file=directory / "vocab.txt",
                                 do_lower_case=do_lower_case, input_names=input_names,
                                 name=f"{source} ({loaded.task})", version=__version__,
                                 description=f"{loaded.config.model_type} {loaded.task} model converted by PocketBERT")


def _training_record(checkpoint: Path) -> dict | None:
    path = Path(checkpoint) / "training.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    record.pop("distillation", None)  # per-stage losses: in the checkpoint's own training.json
    return record


def _filename(recipe: Recipe) -> str:
    return backends.get(recipe.backend).filename(recipe.precision)


def _selection_line(selection: dict) -> str:
    parts = []
    for c in selection["candidates"]:
        ms = c["latency_ms"] if c["latency_ms"] is not None else c["plain_latency_ms"]
        parts.append(f"{c['recipe']} {ms:.1f} ms ({c['outcome']})")  # the chosen one's outcome says "chosen"
    return "int8 auto: " + "; ".join(parts)


def _figures_line(figures: dict) -> str:
    real = figures["real_sentences"]
    line = (f"real sentences: cosine {real['cosine']:.4f}, top-1 agreement {real['top1_agreement']:.1%}, "
            f"max |Δ| {real['max_abs']:.2g}")
    if "fixed_inputs" in figures:
        line = f"fixed inputs max |Δ| {figures['fixed_inputs']['max_abs']:.2g}; " + line
    return line + ("" if figures["passed"] else f"  FAILED: {figures['failure']}")


def _manifest(options, loaded, opts, reports, damage, results, max_length, input_names, tokenizer_settings,
              verify_source, verify_count, notes) -> dict:
    task = loaded.task
    problem_type = getattr(loaded.config, "problem_type", None)
    if task == "classification" and problem_type is None:
        problem_type = "regression" if len(loaded.labels) == 1 else "single_label_classification"
    logits_shape = ["batch", len(loaded.labels)] if task == "classification" else ["batch", "sequence",
                                                                                  len(loaded.labels)]
    return {
        "schema_version": SCHEMA_VERSION,
        "pocketbert_version": __version__,
        "task": task,
        "problem_type": problem_type if task == "classification" else "token_classification",
        "labels": loaded.labels,
        "family": loaded.family.name,
        "model_type": loaded.config.model_type,
        "architecture": type(loaded.model).__name__,
        "source": {"checkpoint": str(loaded.checkpoint), "builtin": loaded.builtin,
                   "head_initialized": loaded.head_initialized,
                   "parameters": sum(p.numel() for p in loaded.model.parameters()),
                   # how a PocketBERT-trained checkpoint was made (finetune/recover/trim-vocab): scores, recipe
                   "training": _training_record(loaded.checkpoint)},
        "opts": list(opts),
        "transforms": [r.to_json() for r in reports],
        "max_sequence_length": max_length,
        "model_vocab_size": loaded.config.vocab_size,
        "inputs": [{"name": n, "dtype": "int64", "shape": ["batch", "sequence"]} for n in input_names],
        "outputs": [{"name": "logits", "dtype": "float32", "shape": logits_shape}],
        "tokenizer": tokenizer_settings,
        "artifacts": [{
            "recipe": r.recipe, "backend": r.recipe.split(":")[0], "precision": r.recipe.split(":")[1],
            "file": r.file, "details": r.details, "verification": r.verification,
            "latency_ms": {"batch": 1, "sequence": min(LATENCY_SEQ, max_length), "threads": options.threads,
                           "median": round(r.latency_ms, 3)} if r.latency_ms is not None else None,
        } for r in results],
        "verification": {
            "reference": "PyTorch float32 model after the transforms (original checkpoint for the damage figures)",
            "texts": verify_source, "samples": verify_count, "max_length": max_length,
            "transform_damage": damage.to_json() if damage else None,
            # int8 kernels differ by instruction set: say which ones the figures above came from
            "machine": machine.verifying_machine(),
        },
        "notes": notes,
    }
