"""Adding a backend or a transform is adding a module: every list a user or the CLI sees is read from the
registries (runtime/registry.py).  A dummy runtime backend, export backend and ``--opt``, each a module
written to a temporary directory that joins its kind's package for the test, must show up in all of them;
the documentation tables checked against the registries must notice that they do not describe it."""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.converter import backends as export_backends
from pocketbert.converter import levers, transforms
from pocketbert.converter.backends.recipes import RecipeChoice, formats, parse_formats, parse_recipes, recipes, select
from pocketbert.converter.cli import cli as converter_cli
from pocketbert.converter.opts import parse_opts
from pocketbert.runtime import backends as runtime_backends
from pocketbert.runtime import choice, contract
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.cli import main as runtime_cli
from pocketbert.runtime.registry import Registry

REPO = Path(__file__).resolve().parents[1]

RUNTIME_BACKEND = '''
    import numpy as np

    from pocketbert.runtime.backends import register
    from pocketbert.runtime.backends.base import Backend


    class DummyBackend(Backend):
        name = "dummy"
        import_name = pip_package = "json"  # always installed
        order = 50

        def __init__(self, path, input_names, threads=None):
            self.path = path

        def run(self, feeds, quiet=False):
            return np.zeros((len(feeds["input_ids"]), 2), np.float32)


    register(DummyBackend)
'''
EXPORT_BACKEND = '''
    from pocketbert.converter.backends import register
    from pocketbert.converter.backends.base import ExportBackend


    class DummyExportBackend(ExportBackend):
        name = "dummy"
        precisions = {"fp32": "a dummy float file", "int8-dynamic": "a dummy int8 file"}

        def export(self, spec, dest):
            raise NotImplementedError

        def quantize(self, spec, precision, dest, calibration, accept=None, float_fallback=True,
                     float_export=None):
            raise NotImplementedError

        def weight_bytes(self, path):
            return {}


    register(DummyExportBackend())
'''
TRANSFORM = '''
    from pocketbert.converter.transforms import Opt, TransformReport, register


    def apply(model, family):
        return TransformReport("dummy", sites=0, changed=0, exact=True)


    register(Opt("dummy", "a rewrite that changes nothing", order=25, exact=True, action="Doing nothing",
                 compared="same vs same", backends=("dummy",), apply=apply))
'''


def _join_package(monkeypatch, tmp_path: Path, package, registry: Registry, module: str, source: str) -> None:
    """Write ``module`` into a directory added to ``package``'s path, and let ``registry`` discover again."""
    directory = tmp_path / package.__name__.replace(".", "_")
    directory.mkdir()
    (directory / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(directory)])
    registry.discover()  # every real module first, so that only the dummy is new
    monkeypatch.setattr(registry, "_discovered", False)


@pytest.fixture
def dummies(tmp_path, monkeypatch):
    kinds = [(runtime_backends, runtime_backends.BACKENDS, "dummy_runtime_backend", RUNTIME_BACKEND),
             (export_backends, export_backends.EXPORT_BACKENDS, "dummy_export_backend", EXPORT_BACKEND),
             (transforms, transforms.OPTS, "dummy_opt", TRANSFORM)]
    for package, registry, module, source in kinds:
        _join_package(monkeypatch, tmp_path, package, registry, module, source)
    yield
    for package, registry, module, _ in kinds:
        registry.unregister("dummy")
        sys.modules.pop(f"{package.__name__}.{module}", None)
    importlib.invalidate_caches()


def _layout_files() -> set[str]:
    """The file names in docs/manifest.md's bundle layout table."""
    text = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([^`]+)` \|", text.split("## 2.", 1)[0], re.MULTILINE))


def undocumented_artifact_files() -> list[str]:
    """Artifact files of registered recipes missing from docs/manifest.md's bundle layout table."""
    return [name for r in recipes().values() if (name := contract.artifact_file(r.backend, r.precision))
            not in _layout_files()]


def undocumented_opts() -> list[str]:
    """Registered --opt names missing from docs/converter.md's --opt table (which lists them in their order)."""
    text = (REPO / "docs" / "converter.md").read_text(encoding="utf-8")
    documented = re.findall(r"^  \| `(\w+)` \|", text, re.MULTILINE)
    return [name for name in transforms.OPTS.names() if name not in documented]


def test_the_docs_tables_describe_every_registered_recipe_and_opt():
    assert undocumented_artifact_files() == [] and undocumented_opts() == []
    assert {contract.LABELS_FILE, contract.VOCAB_FILE, contract.TOKENIZER_FILE, contract.TOKENIZER_CONFIG_FILE,
            contract.MANIFEST} <= _layout_files()


def test_the_real_registries():
    assert runtime_backends.BACKENDS.names() == ("onnx", "tflite") == formats()
    assert transforms.OPTS.names() == ("nonorm", "relu", "fold", "int8")
    assert list(recipes()) == ["onnx:fp32", "onnx:int8-dynamic", "onnx:int8-static", "tflite:fp32", "tflite:fp16",
                               "tflite:int8-dynamic", "tflite:int8-static", "tflite:int4-dynamic"]
    assert runtime_backends.fixed_length_backends() == ("tflite",)
    assert [contract.artifact_file(*name.split(":")) for name in ("onnx:fp32", "tflite:int8-static")] == \
        ["model.onnx", "model.int8-static.tflite"]


def test_a_backend_module_and_an_opt_module_reach_every_list(dummies):
    assert runtime_backends.BACKENDS.names() == ("onnx", "tflite", "dummy")
    assert formats() == ("onnx", "tflite", "dummy") and parse_formats("dummy,onnx") == ["onnx", "dummy"]
    assert [n for n in recipes() if n.startswith("dummy")] == ["dummy:fp32", "dummy:int8-dynamic"]
    assert [r.name for r in parse_recipes("dummy:int8-dynamic")] == ["dummy:int8-dynamic"]
    chosen = select(["int8"], "auto", ["dummy"])
    assert chosen[0].name == "dummy:fp32" and isinstance(chosen[1], RecipeChoice)
    assert [r.name for r in chosen[1].candidates] == ["dummy:int8-dynamic"]
    assert parse_opts("fold,dummy,nonorm") == ("nonorm", "dummy", "fold")  # by declared order
    listing = CliRunner().invoke(converter_cli, ["list"], terminal_width=400)
    assert listing.exit_code == 0 and "dummy: a rewrite that changes nothing" in listing.output
    assert "dummy:int8-dynamic: a dummy int8 file" in listing.output
    help_text = CliRunner().invoke(runtime_cli, ["--help"], terminal_width=200).output
    assert "[auto|onnx|tflite|dummy]" in help_text
    assert undocumented_artifact_files() == ["model.dummy", "model.int8-dynamic.dummy"]
    assert undocumented_opts() == ["dummy"]


def test_the_runtime_chooses_and_opens_a_new_backend(dummies, tmp_path):
    bundle_dir = tmp_path / "bundle"
    bundle_dir.mkdir()
    (bundle_dir / "model.dummy").write_bytes(b"dummy")
    manifest = {"schema_version": 1, "task": "classification", "labels": ["a", "b"], "max_sequence_length": 8,
                "inputs": [{"name": "input_ids"}, {"name": "attention_mask"}],
                "tokenizer": {"tokenizer_file": contract.TOKENIZER_FILE},
                "artifacts": [{"recipe": "dummy:fp32", "backend": "dummy", "precision": "fp32",
                               "file": contract.artifact_file("dummy", "fp32"), "verification": {"passed": True}}]}
    contract.write_manifest(bundle_dir, manifest)
    bundle = Bundle.open(bundle_dir)
    assert bundle.select("auto").recipe == bundle.select("dummy").recipe == "dummy:fp32"
    assert [a.recipe for a in choice.candidates(bundle, None)] == ["dummy:fp32"]
    opened = runtime_backends.open_backend(bundle.select("dummy"), bundle.input_names, threads=1)
    assert type(opened).__name__ == "DummyBackend"
    assert json.loads((bundle_dir / contract.MANIFEST).read_text())["files"]["model.dummy"]["bytes"] == 5


def test_an_opt_declaring_its_backends_refuses_the_others(dummies, tmp_path):
    from pocketbert.converter.errors import ConverterInputError
    from pocketbert.converter.options import ConvertOptions, plan

    with pytest.raises(ConverterInputError, match="--opt dummy works with dummy only, and onnx is also exported"):
        plan(ConvertOptions(checkpoint=str(tmp_path / "none"), out=tmp_path / "out", opts="dummy", formats="onnx"))


def test_a_second_plugin_of_the_same_name_is_refused():
    registry: Registry[transforms.Opt] = Registry("--opt", transforms.__name__)
    first = registry.register(transforms.Opt("x", "", order=1))
    assert registry.register(first) is first  # the same one again: its module imported once more
    with pytest.raises(ValueError, match="'x' registered twice"):
        registry.register(transforms.Opt("x", "other", order=2))


@pytest.mark.parametrize("lever", levers.all(), ids=lambda lever: lever.name)
def test_every_registered_lever_declares_what_a_plan_reads(lever):
    """Each lever says what it changes, its place, whether it trains (then its share of a budget), how it runs, and
    what it saves at the shapes of a 6-block MiniLM (a setting lever must save bytes or multiply-adds)."""
    from pocketbert.converter.levers.shapes import from_config

    shape = from_config({"model_type": "bert", "architectures": ["BertForSequenceClassification"], "num_labels": 2,
                         "hidden_size": 384, "intermediate_size": 1536, "num_hidden_layers": 6,
                         "num_attention_heads": 12})
    assert lever.changes and callable(lever.run) and levers.get(lever.name) is lever
    assert [other.order for other in levers.all()].count(lever.order) == 1
    assert (lever.budget_weight > 0) == lever.trains
    half = {"pieces": 16000, "rank": 160, "units": 768, "blocks": 3, "": None}[lever.setting]
    saving = lever.saves(shape, half)
    if lever.setting:
        assert saving.bytes > 0 or saving.macs > 0
    else:
        assert saving == levers.Saving(0, 0)


def test_the_real_lever_registry_is_in_the_phone_demos_order():
    assert [lever.name for lever in levers.all()] == ["recover", "trim-vocab", "factor-embeddings", "narrow", "shrink",
                                                      "int4-tune", "pack"]


LEVER = '''
    from pocketbert.converter.levers import Lever, register


    register(Lever("dummy", "the feed-forward blocks, to 8 units", order=35, trains=True, setting="units",
                   budget_weight=5, reshape=lambda shape, units: shape.narrowed(units),
                   choose=lambda shape, goal: None if goal.reached(shape) else 8, run=lambda step: step.source))
'''


def test_a_lever_module_reaches_the_plan(tmp_path, monkeypatch):
    """A lever is a module: registered, it is planned in its order and takes its share of the budget."""
    from pocketbert.converter.levers import plan, shapes
    from pocketbert.converter.training.loop import Budget

    _join_package(monkeypatch, tmp_path, levers, levers.LEVERS, "dummy_lever", LEVER)
    try:
        shape = shapes.from_config({"model_type": "bert", "architectures": ["BertForTokenClassification"],
                                    "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
                                    "num_attention_heads": 2, "vocab_size": 1000})
        made = plan.make(shape, plan.Goal(max_macs=0.5), Budget(steps=40))
        # in its order: after narrowing (which it makes needless here) and before fewer blocks
        assert made.levers[:2] == ["dummy", "shrink"] and made.steps[0].setting == 8
        assert made.levers == [lever.name for lever in levers.all() if lever.name in made.levers]
        weights = sum(step.lever.budget_weight for step in made.steps if step.lever.trains)
        assert made.steps[0].budget.steps == round(40 * 5 / weights)
    finally:
        levers.LEVERS.unregister("dummy")
        sys.modules.pop(f"{levers.__name__}.dummy_lever", None)
