"""What a conversion is asked to do (:class:`ConvertOptions`, the Python face of the convert command) and
the checks that need no model, so that a bad option fails in a second rather than after the export.

:func:`plan` turns the options into a :class:`Plan`: the parsed ``--opt`` transforms, the recipes to
build, and the calibration text the int8 recipes will use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .checkpoints import loading
from .checks import verify
from .inputs import texts as textdata
from .backends import EXPORT_BACKENDS
from .errors import ConverterInputError, OutputError
from .opts import Opts, parse_opts
from .backends.recipes import INT8_CHOICES, Recipe, RecipeChoice, parse_formats, parse_recipes, select
from .sizes import parse_size
from .checkpoints.training_record import task_file
from .transforms.smoothquant import DEFAULT_ALPHA


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
    calibration_samples: int | None = None  # None: calibration_samples_for(the recipes)
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
    int8_min_entity_f1: float = verify.INT8_MIN_ENTITY_F1  # token classification only
    smooth_alpha: float | None = DEFAULT_ALPHA  # None: never smooth
    int8_equalize: bool = True  # static int8 of a nonorm model: equalise its residual stream first
    measure_latency: bool = True
    dev_gate: bool = True  # score every file on the task's dev split when it is here (checks.dev_gate)
    max_size: str | int | None = None  # TFLite: the most accurate recipe whose file fits, e.g. "8MB" or bytes
    # accuracy recovery (converter.training.recovery): a task name or training file, and its settings
    recover: str | None = None
    recover_options: dict = field(default_factory=dict)  # RecoverOptions fields: budget, schedule, lr, …
    max_accuracy_drop: float = 1.0  # points of the task metric a recovered model may lose against its teacher


@dataclass
class Plan:
    opts: Opts
    recipes: list[Recipe | RecipeChoice]
    calibration_texts: list | None
    calibration_source: Path | None

    @property
    def candidates(self) -> list[Recipe]:
        """Every recipe the conversion may build: a choice's candidates each (all are built, one kept)."""
        return [r for planned in self.recipes
                for r in (planned.candidates if isinstance(planned, RecipeChoice) else [planned])]

    @property
    def backends(self) -> set[str]:
        return {r.backend for r in self.candidates}

    @property
    def fixed_lengths(self) -> bool:
        """Some planned backend runs fixed sequence lengths (TFLite's buckets)."""
        return any(EXPORT_BACKENDS[name].fixed_lengths for name in self.backends)

    @property
    def quantizes(self) -> bool:
        """Something is made from a float export by a quantiser (int8, or fp16)."""
        return any(isinstance(r, RecipeChoice) or r.quantized for r in self.recipes)


def plan(options: ConvertOptions) -> Plan:
    """Option and calibration-file checks that need no model: they fail in a second."""
    opts = parse_opts(options.opts)
    _check_scalars(options, opts)
    recipes = select(opts, options.int8, parse_formats(options.formats), named=_named_recipes(options, opts),
                     max_bytes=_max_bytes(options))
    chosen = Plan(opts, recipes, None, None)
    _check_opt_backends(opts, chosen.backends)
    int8_planned = any(isinstance(r, RecipeChoice) or r.kind == "int8" for r in recipes)
    if options.buckets and not chosen.fixed_lengths:
        fixed = " or ".join(b.name for b in EXPORT_BACKENDS if b.fixed_lengths)
        raise ConverterInputError(f"--buckets was given but nothing is exported to {fixed}; only {fixed} files have "
                                  "static sequence buckets", f"add {fixed} to --format, or drop --buckets")
    if options.calibration is not None and not int8_planned:
        raise ConverterInputError("--calibration was given but no int8 recipe is built; only int8 uses calibration "
                                  "text", "add int8 to --opt (or an int8 --recipe), or drop --calibration")
    checkpoint_dir, _ = loading.resolve(options.checkpoint)
    if int8_planned:
        # default: the training split of the checkpoint's own task (text like the model's inputs calibrates
        # better than generic sentences; a pair model needs pairs)
        chosen.calibration_source = options.calibration or task_file(checkpoint_dir, "train", options.data_dir)
        texts = textdata.read_texts(chosen.calibration_source or textdata.BUILTIN_CALIBRATION, what="calibration")
        # evenly spread over the file: training files are often sorted (by document, by length)
        samples = calibration_samples_for(recipes) if options.calibration_samples is None \
            else options.calibration_samples
        step = max(1, len(texts) // samples)
        chosen.calibration_texts = texts[::step][:samples]
    if checkpoint_dir.exists() and checkpoint_dir.resolve().is_relative_to(Path(options.out).resolve()):
        raise OutputError(f"--out {str(options.out)!r} is, or contains, the checkpoint being converted",
                          "choose an --out path outside the checkpoint directory")
    return chosen


def _check_opt_backends(opts: Opts, backends: set[str]) -> None:
    """An --opt that declares the backends it works with refuses the others."""
    for opt in opts.declared:
        other = sorted(backends - set(opt.backends)) if opt.backends else []
        if other:
            works = ", ".join(opt.backends)
            raise ConverterInputError(f"--opt {opt.name} works with {works} only, and {', '.join(other)} is also "
                                      "exported", f"drop {opt.name} from --opt, or export only {works} (--format)")


#: torch.manual_seed fails with a traceback beyond 64 bits; 32 bits (numpy's range too) are plenty
MAX_SEED = 2**32 - 1


def _check_scalars(options: ConvertOptions, opts: Opts) -> None:
    seed = options.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConverterInputError(f"seed {seed!r}: it must be a whole number from 0 to {MAX_SEED}",
                                  "pass e.g. --seed 0")
    if isinstance(options.threads, bool) or not isinstance(options.threads, int) or options.threads < 1:
        raise ConverterInputError(f"--threads {options.threads!r}: it must be a whole number ≥ 1",
                                  "pass e.g. --threads 2")
    samples = options.calibration_samples
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise ConverterInputError(f"--calibration-samples {samples!r}: it must be a whole number ≥ 1",
                                  "pass e.g. --calibration-samples 256, or leave it out for the default")
    textdata.data_dir(options.data_dir)  # an explicit --data-dir that does not exist fails here, not after export
    if options.int8 not in INT8_CHOICES:
        raise ConverterInputError(f"unknown --int8 {options.int8!r}", f"use one of {', '.join(INT8_CHOICES)}")
    if not opts.quantizes and options.int8 != "auto":
        raise ConverterInputError(f"--int8 {options.int8} was given but --opt has no int8", "add int8 to --opt")


#: calibration rows when a static int8 file is asked for by name: its activation ranges are its accuracy
#: (SST-2 demo, TFLite: 98.6% -> 99.1% top-1 agreement with float from 256 to 1024 rows)
STATIC_CALIBRATION_SAMPLES = 1024
#: otherwise (``--int8 auto``, where static is one candidate, and dynamic's smoothing statistics): each row
#: costs one run of the model per TFLite signature in ai-edge-quantizer's calibration
CALIBRATION_SAMPLES = 256


def calibration_samples_for(recipes: list[Recipe | RecipeChoice]) -> int:
    """The default number of calibration texts for these recipes."""
    asked = any(isinstance(r, Recipe) and r.precision == "int8-static" for r in recipes)
    return STATIC_CALIBRATION_SAMPLES if asked else CALIBRATION_SAMPLES


def _max_bytes(options: ConvertOptions) -> int | None:
    """``--max-size`` in bytes; it chooses the TFLite recipe, so it excludes the other ways of choosing one."""
    if options.max_size is None:
        return None
    given = options.max_size
    size = parse_size(str(given) if isinstance(given, int) and not isinstance(given, bool) else given)
    if options.recipes:
        raise ConverterInputError("--max-size and --recipe both choose what to build",
                                  "give --max-size with --format tflite (it picks the recipe), or name recipes with "
                                  "--recipe")
    laddered = [b.name for b in EXPORT_BACKENDS if b.size_ladder]
    if not set(laddered) & set(parse_formats(options.formats)):
        names = " or ".join(laddered)
        raise ConverterInputError(f"--max-size chooses the {names} file, and nothing is exported to {names}",
                                  f"add {names} to --format (e.g. --format {laddered[0]} --max-size 8MB)")
    return size


def _named_recipes(options: ConvertOptions, opts: Opts) -> list[Recipe]:
    """``--recipe`` names, which exclude the other ways of choosing what to build."""
    named = parse_recipes(options.recipes)
    if named:
        given = {"--opt int8": opts.quantizes, f"--int8 {options.int8}": options.int8 != "auto",
                 "--format": options.formats is not None}
        clash = [flag for flag, present in given.items() if present]
        if clash:
            raise ConverterInputError(f"--recipe and {' and '.join(clash)} both choose what to build",
                                      "name every recipe with --recipe (e.g. --recipe "
                                      "tflite:int8-static,onnx:int8-dynamic), or use --opt int8 --int8 … --format …")
    return named

