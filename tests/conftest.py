"""Shared fixtures: tiny random checkpoints of every registered family, and the real MiniLM.

Tiny models are built from each family's ``tiny_config`` with a fixed seed and saved as ordinary
Hugging Face directories, so tests exercise the same loading path as users' checkpoints.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModel, AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer

from pocketbert.converter.backends.export_cache import ENV as EXPORT_CACHE
from pocketbert.converter.builtin import BUILTIN
from pocketbert.converter.families import families
from pocketbert.converter.pipeline import ConvertOptions

from . import debian_prefetch
from .shared import once, shared_root, worker_threads

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("POCKETBERT_DATA", REPO.parent / "shared" / "data"))
FAMILY_NAMES = [f.name for f in families()]
NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


@pytest.fixture(scope="session", autouse=True)
def deterministic_auto_backend(tmp_path_factory):
    """``backend="auto"`` measures which artifact is fastest on the machine.  Tests that are not about that
    choice get the deterministic rule (``POCKETBERT_AUTO=static``, inherited by subprocesses), and no test
    writes choices into the user's cache (tests/runtime/test_auto_choice.py measures on purpose)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POCKETBERT_AUTO", "static")
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="session", autouse=True)
def shared_exports(tmp_path_factory):
    """One export cache for the session's workers and the converters they start (converter/backends/export_cache.py):
    the suite converts the same tiny checkpoints hundreds of times and differs after the export.  Tests about the
    export itself take ``fresh_exports``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(EXPORT_CACHE, str(shared_root(tmp_path_factory) / "exports"))
        yield


@pytest.fixture
def fresh_exports(monkeypatch):
    """Every export of this test traced and lowered, none served from the session's cache."""
    monkeypatch.delenv(EXPORT_CACHE, raising=False)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    return BUILTIN["minilm"].path()


@pytest.fixture(scope="session")
def tokenizer(minilm_dir):
    return AutoTokenizer.from_pretrained(minilm_dir)


def _family(name):
    return next(f for f in families() if f.name == name)


def build_checkpoint(directory: Path, family_name: str, tokenizer, head: str = "classification",
                     labels=("negative", "neutral", "positive"), seed: int = 0, **config_overrides) -> Path:
    """Save a tiny random checkpoint of ``family_name`` with ``head``: classification, ner or none."""
    config = _family(family_name).tiny_config(vocab_size=len(tokenizer))
    for key, value in config_overrides.items():
        setattr(config, key, value)
    torch.manual_seed(seed)
    if head == "none":
        model = AutoModel.from_config(config)
    else:
        config.num_labels = len(labels)
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
        cls = AutoModelForSequenceClassification if head == "classification" else AutoModelForTokenClassification
        model = cls.from_config(config)
    model.eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory, tokenizer):
    """family name -> {'classification': dir, 'ner': dir, 'none': dir}; built once for the session (all workers)."""
    def build(root):
        return {name: {"classification": build_checkpoint(root / f"{name}-cls", name, tokenizer),
                       "ner": build_checkpoint(root / f"{name}-ner", name, tokenizer, head="ner", labels=NER_LABELS),
                       "none": build_checkpoint(root / f"{name}-bare", name, tokenizer, head="none")}
                for name in FAMILY_NAMES}
    return once(tmp_path_factory, "checkpoints", build)


@pytest.fixture
def options(tmp_path):
    """ConvertOptions with test-friendly defaults (fewer verification sentences, no latency runs)."""
    def make(checkpoint, **kwargs):
        kwargs.setdefault("out", tmp_path / "bundle")
        kwargs.setdefault("verify_samples", 200)
        kwargs.setdefault("calibration_samples", 64)
        kwargs.setdefault("measure_latency", False)
        kwargs.setdefault("threads", worker_threads())
        kwargs.setdefault("data_dir", DATA)
        # One format and one int8 method unless a test asks: the defaults (tflite,onnx; int8 auto)
        # build several artifacts and have tests of their own.
        if "recipes" not in kwargs:
            kwargs.setdefault("formats", "onnx")
            if "int8" in (kwargs.get("opts") or ""):
                kwargs.setdefault("int8", "dynamic")
        return ConvertOptions(checkpoint=str(checkpoint), **kwargs)
    return make


def copy_checkpoint(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def export_spec(checkpoint: Path, buckets=(32,)):
    """(loaded checkpoint, ExportSpec) as the pipeline builds them, for tests that call a backend directly."""
    from pocketbert.converter.backends import ExportSpec
    from pocketbert.converter.backends.logits_model import LogitsModel
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.inputs.encoding import encode

    loaded = loading.load(str(checkpoint))
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if loaded.family.uses_token_type_ids else [])

    def make_batches(texts, pad_to=None, **kwargs):
        return [encode(loaded.tokenizer, texts, input_names=names, max_length=128, pad_to=pad_to)]

    spec = ExportSpec(model=LogitsModel(loaded.model, names).eval(), family=loaded.family, input_names=names,
                      output_name="logits", max_length=128, make_batches=make_batches, buckets=list(buckets))
    return loaded, spec


#: short sentiment sentences for full-integer tests: calibration text, and sentences it never saw
FULL_INTEGER_TEXTS = ["A gripping , beautifully acted film .", "Dull .", "the movie was ok but long", "great fun",
                      "an utterly forgettable mess", "I loved every minute of it , really", "not bad at all",
                      "two hours I will never get back"]
FULL_INTEGER_UNSEEN = ["what a film", "boring and slow , not worth it", "fine",
                       "a quiet , moving portrait of a family", "the plot makes no sense"]


def nonorm_model(checkpoint: Path, *transforms: str, buckets=(16,)):
    """(loaded, ExportSpec) of ``checkpoint`` with nonorm, relu and ``transforms`` applied, and NoNorms that
    are not the identity (an identity MUL/ADD would be folded away by the exporter, and a wrong γ/β
    update would not show)."""
    import torch

    from pocketbert.converter.transforms import OPTS

    loaded, spec = export_spec(checkpoint, buckets=list(buckets))
    for name in ("nonorm", "relu", *transforms):
        OPTS[name].apply(loaded.model, loaded.family)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, norm in loaded.family.norms(loaded.model):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=generator))
            norm.bias.copy_(0.3 * torch.randn(norm.bias.shape, generator=generator))
    return loaded, spec


# --- running on every core (pytest-xdist) --------------------------------------------------------------------
#: Modules that hold the suite's longest runs (browser, Java, emulated CPUs, real-model conversions and
#: training), started first so that the shorter modules fill the other worker around them.  Only the order
#: depends on this list; a module missing from it still runs.
LONGEST_FIRST = (
    "tests/test_web_demo.py",
    "tests/test_android_core.py",
    "tests/test_convert.py",
    "tests/test_recovery.py",
    "tests/test_tflite.py",
    "tests/test_arm64.py",
    "tests/test_int8_cpus.py",
    "tests/test_new_task.py",
    "tests/test_distill.py",
    "tests/test_fake_quant.py",
    # after the modules above, so that the browser bundles it shares with test_web_demo.py are built by then
    "tests/test_android_apk.py",
    # single tests of one to two minutes (the README's quick start, real-MiniLM conversions and training):
    # late in file order, they would end the run alone
    "tests/test_readme.py",
    "tests/test_tflite_metadata.py",
    "tests/test_training.py",
    "tests/benchmarks/test_glue.py",
    "tests/runtime/test_parity.py",
)
#: Modules that must not run at the same time as each other: each starts Ray (a local instance, a two-node
#: cluster on loopback), and two Ray heads on one 2-core machine starve each other.
SAME_WORKER = {"tests/runtime/test_corpus_ray.py": "ray", "tests/runtime/test_corpus_ray_cluster.py": "ray"}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_module(item.nodeid), len(rank)))  # stable: file order otherwise


def pytest_xdist_make_scheduler(config, log):
    """One module per work unit (its module-scoped fixtures are built once), in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return SAME_WORKER.get(_module(nodeid), _module(nodeid))

    config.option.loadscopereorder = False  # keep LONGEST_FIRST's order, not "most tests first"
    return ByModule(config, log)


_PREFETCH = pytest.StashKey()


def pytest_sessionstart(session):
    """The run's Debian packages, installing in the background from the start (tests/debian_prefetch.py); in the
    controlling process only, not once per xdist worker."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_PREFETCH] = debian_prefetch.start()


def pytest_sessionfinish(session):
    """Never leave apt-get running behind the run (a test may have needed no package it installs)."""
    prefetch = session.config.stash.get(_PREFETCH, None)
    if prefetch is not None:
        prefetch.wait()


def pytest_configure(config):
    """Each xdist worker gets its share of the cores for PyTorch, instead of every worker taking them all (and the
    conversions of ``options`` and ``convert_bundle`` as their --threads)."""
    torch.set_num_threads(worker_threads())
