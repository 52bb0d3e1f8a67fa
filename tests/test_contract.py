"""One bundle contract: defined once (runtime.contract), written by the converter, and the converter's
verification runs the runtime's own loader and backends, so it checks the code that ships."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pocketbert.converter.errors import VerificationError
from pocketbert.converter.pipeline import convert
from pocketbert.runtime import buckets, contract
from pocketbert.runtime.errors import BundleError

REPO = Path(__file__).resolve().parents[1]
CONTRACT_NAMES = ("SCHEMA_VERSION", "MANIFEST", "TASKS", "LABELS_FILE", "VOCAB_FILE",
                  "TOKENIZER_FILE", "TOKENIZER_CONFIG_FILE", "PROBLEM_TYPES")


def test_every_contract_name_is_defined_once():
    sources = list((REPO / "pocketbert").rglob("*.py"))
    for name in CONTRACT_NAMES:
        defined = [str(p.relative_to(REPO)) for p in sources
                   if re.search(rf"^{name}\s*=", p.read_text(encoding="utf-8"), re.MULTILINE)]
        assert defined == ["pocketbert/runtime/contract.py"], f"{name} is defined in {defined}"
    defined = [str(p.relative_to(REPO)) for p in sources
               if re.search(r"^SIGNATURE_PREFIX\s*=", p.read_text(encoding="utf-8"), re.MULTILINE)]
    assert defined == ["pocketbert/runtime/buckets.py"]  # the signatures' names: the contract's stdlib-only part


def _off_by_one(original):
    def run(self, feeds, quiet=False):
        return original(self, feeds, quiet) + np.float32(1.0)
    return run


@pytest.mark.parametrize("fmt, module, cls", [("onnx", "pocketbert.runtime.backends.onnx", "OnnxBackend"),
                                               ("tflite", "pocketbert.runtime.backends.tflite", "TfliteBackend")])
def test_breaking_the_runtime_backend_fails_the_conversion(checkpoints, options, monkeypatch, fmt, module, cls):
    """A runtime backend that computes something else must stop the converter from writing a bundle."""
    import importlib

    backend = getattr(importlib.import_module(module), cls)
    monkeypatch.setattr(backend, "run", _off_by_one(backend.run))
    with pytest.raises(VerificationError, match=f"{fmt}:fp32"):
        buckets = {"buckets": [32]} if fmt == "tflite" else {}
        convert(options(checkpoints["bert"]["classification"], formats=fmt, verify_samples=20, **buckets))


def test_the_converter_writes_what_the_runtime_reads(checkpoints, options):
    from pocketbert import runtime

    result = convert(options(checkpoints["bert"]["ner"], formats="onnx,tflite", buckets=[32, 64], verify_samples=20))
    bundle = runtime.Bundle.open(result.bundle)
    manifest = json.loads((result.bundle / contract.MANIFEST).read_text())
    assert manifest["schema_version"] == contract.SCHEMA_VERSION and bundle.task in contract.TASKS
    assert sorted(manifest["files"]) == sorted(p.name for p in result.bundle.iterdir() if p.name != contract.MANIFEST)
    assert all(manifest["files"][p.name] == contract.file_entry(p) for p in result.bundle.iterdir()
               if p.name != contract.MANIFEST)
    tflite = next(a for a in manifest["artifacts"] if a["recipe"] == "tflite:fp32")
    assert tflite["details"]["signatures"] == [buckets.signature_name(b) for b in (32, 64)]
    assert [buckets.bucket_of(s) for s in tflite["details"]["signatures"]] == [32, 64]


def test_bucket_rules():
    assert buckets.smallest_bucket([64, 32, 128], 33) == 64
    assert buckets.smallest_bucket([32, 64], 32) == 32
    assert buckets.smallest_bucket([32, 64], 65) is None
    assert buckets.bucket_of("seq_128") == 128
    assert buckets.bucket_of("serving_default") is None and buckets.bucket_of("seq_x") is None


def test_manifest_is_written_whole(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"x" * 10)
    contract.write_manifest(tmp_path, {"schema_version": contract.SCHEMA_VERSION})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "model.onnx"]  # no partial file left
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert files == {"model.onnx": {"bytes": 10, "sha256": contract.sha256(tmp_path / "model.onnx")}}


def test_latency_is_timed_on_attended_tokens(checkpoints, options):
    """The runtime runs dynamic int8 without padding: a padded timing row would time 3 tokens, not 128."""
    from pocketbert.converter.timing.candidate_timing import alternating_rounds_ms
    from pocketbert.converter.stages import STAGES
    from pocketbert.converter.stages.quantize import QuantizeStage
    from pocketbert.converter.stages.verify import VerifyStage

    timed = []

    def record(runners, feeds, *args, **kwargs):
        timed.extend([feeds["attention_mask"]] * len(runners))
        return alternating_rounds_ms(runners, feeds, *args, **kwargs)

    def int8_faster(runners, feeds):  # the int8 file is kept, whatever this CPU makes of a tiny model
        return [[1.0] * 5, [2.0] * 5]

    stages = tuple(VerifyStage(timer=record) if isinstance(s, VerifyStage) else
                   QuantizeStage(timer=int8_faster) if isinstance(s, QuantizeStage) else s for s in STAGES)
    result = convert(options(checkpoints["bert"]["classification"], opts="int8", verify_samples=20,
                             measure_latency=True), stages=stages)
    assert {a.recipe for a in result.artifacts} == {"onnx:fp32", "onnx:int8-dynamic"}
    assert len(timed) == 2 and all(mask.shape == (1, 128) and mask.all() for mask in timed)


def _documented_top_level_fields() -> list[str]:
    """The keys of docs/manifest.md's top-level table, in its order (`inputs` / `outputs` is one row)."""
    text = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    table = text.split("### Top level", 1)[1].split("\n### ", 1)[0]
    return [key for row in table.splitlines() if row.startswith("| `") for key in re.findall(r"`(\w+)`",
                                                                                            row.split("|")[1])]


def test_the_documented_fields_are_the_schema_in_its_order():
    assert _documented_top_level_fields() == list(contract.MANIFEST_FIELDS)


def test_the_writer_orders_by_the_schema_and_refuses_an_undescribed_field():
    written = contract.in_schema_order({"artifacts": [], "task": "ner", "schema_version": 1})
    assert list(written) == ["schema_version", "task", "artifacts"]
    with pytest.raises(ValueError, match="speed"):
        contract.in_schema_order({"task": "ner", "speed": 1})


def test_the_validator_reads_the_schema(tmp_path):
    """A required field the schema checks is refused when missing; an optional one may be null, files may not."""
    good = {"schema_version": 1, "task": "ner", "labels": ["O"], "max_sequence_length": 8,
            "inputs": [{"name": "input_ids"}], "tokenizer": {"tokenizer_file": contract.TOKENIZER_FILE},
            "artifacts": [], "notes": None, "problem_type": None}
    contract.validate_manifest(good, tmp_path)
    for key in (k for k, f in contract.MANIFEST_FIELDS.items() if f.required and f.check):
        with pytest.raises(BundleError, match=f"'{key}' must be"):
            contract.validate_manifest({k: v for k, v in good.items() if k != key}, tmp_path)
    with pytest.raises(BundleError, match="'files' must be an object"):
        contract.validate_manifest({**good, "files": None}, tmp_path)
