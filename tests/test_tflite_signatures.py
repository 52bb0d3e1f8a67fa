"""A .tflite's bucket signatures exported in two processes and merged: the same file as one export (every
signature's outputs bit for bit, every weight stored once), and a failed second process falls back to one."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.schema_py_generated import Model

from pocketbert.converter.backends import get
from pocketbert.converter.backends import tflite_signatures as signatures
from pocketbert.converter.backends.tflite import op_histogram
from pocketbert.converter.backends.tflite_recipes import quantize_file
from pocketbert.converter.backends.tflite_weights import float_constants

from .conftest import export_spec

pytestmark = pytest.mark.usefixtures("fresh_exports")  # the export itself is under test


def _examples(spec, buckets):
    batches = {b: spec.make_batches(["a film worth seeing , twice"], pad_to=b)[0] for b in buckets}
    return {f"seq_{b}": {n: batch[n] for n in spec.input_names} for b, batch in batches.items()}


@pytest.fixture(scope="module")
def one_export(checkpoints) -> bytes:
    """Signatures seq_16 and seq_32 converted in one process: the first half of the merge below and the reference of
    the two-process export, the same model and inputs in both tests (a conversion costs ~10 s of CPU)."""
    _, spec = export_spec(checkpoints["bert"]["classification"], buckets=(16, 32))
    return signatures.converted(spec.model, _examples(spec, (16, 32)))


def test_two_files_merged_are_the_one_export_of_all_their_signatures(checkpoints, one_export, tmp_path):
    _, spec = export_spec(checkpoints["bert"]["classification"])
    examples = _examples(spec, (16, 32, 48))
    whole = signatures.converted(spec.model, examples)
    first = one_export  # seq_16 and seq_32
    second = signatures.converted(spec.model, {"seq_48": examples["seq_48"]})
    merged = signatures.merged(first, second)
    assert signatures.same_outputs(merged, dict.fromkeys(examples, whole), examples)
    (tmp_path / "whole.tflite").write_bytes(whole)
    (tmp_path / "merged.tflite").write_bytes(merged)
    assert op_histogram(tmp_path / "merged.tflite") == op_histogram(tmp_path / "whole.tflite")
    # every weight once: the second file's equal weights point at the first file's buffers
    whole_weights, merged_weights = (sorted(v.nbytes for v in float_constants(tmp_path / f"{n}.tflite")[0].values())
                                     for n in ("whole", "merged"))
    assert whole_weights == merged_weights
    assert abs(len(merged) - len(whole)) < 0.02 * len(whole)
    names = [t.Name() for m in [Model.GetRootAs(merged, 0)] for s in range(m.SubgraphsLength())
             for t in (m.Subgraphs(s).Tensors(i) for i in range(m.Subgraphs(s).TensorsLength()))]
    assert len(names) == len(set(names))  # every tensor name once in the model, as ai-edge-quantizer requires
    quantize_file(tmp_path / "merged.tflite", tmp_path / "int8.tflite", "int8-dynamic", [])
    quantised = Interpreter(model_path=str(tmp_path / "int8.tflite"))
    for name, example in examples.items():  # every signature still there, and running
        logits = quantised.get_signature_runner(name)(**{k: np.asarray(v, np.int32) for k, v in example.items()})
        assert np.isfinite(logits["logits"]).all()


def test_the_export_runs_in_two_processes_when_it_pays_and_falls_back_when_the_second_fails(checkpoints, one_export,
                                                                                           monkeypatch, tmp_path):
    _, spec = export_spec(checkpoints["bert"]["classification"], buckets=(16, 32))
    examples = _examples(spec, (16, 32))
    assert not signatures.two_processes_pay(spec.model, 2, threads=2)  # a tiny model: one process is quicker
    assert signatures.export_in_two_processes(spec.model, examples, tmp_path / "two.tflite")
    one = one_export
    assert signatures.same_outputs((tmp_path / "two.tflite").read_bytes(), dict.fromkeys(examples, one), examples)
    monkeypatch.setattr(signatures.sys, "executable", "/bin/false")  # the second process fails
    assert not signatures.export_in_two_processes(spec.model, examples, tmp_path / "failed.tflite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.tflite"]  # nothing half-written, no work left
    monkeypatch.setattr(signatures, "MIN_PARAMETERS", 0)
    spec.threads = 2
    get("tflite").export(spec, tmp_path / "fallback.tflite")  # the backend then exports in one process
    assert signatures.same_outputs((tmp_path / "fallback.tflite").read_bytes(), dict.fromkeys(examples, one), examples)
    assert np.all([p.name != ".fallback.tflite.second-process" for p in tmp_path.iterdir()])


def test_a_file_merged_from_the_export_caches_signatures_computes_what_one_export_does(checkpoints, one_export,
                                                                                       monkeypatch, tmp_path):
    from pocketbert.converter.backends import export_cache
    from pocketbert.converter.backends import tflite as backend

    traced, real = [], backend.converted
    monkeypatch.setattr(backend, "converted", lambda model, examples: traced.append(list(examples))
                        or real(model, examples))
    monkeypatch.setenv(export_cache.ENV, str(tmp_path / "cache"))
    for buckets in ((16,), (16, 32)):
        _, spec = export_spec(checkpoints["bert"]["classification"], buckets=buckets)
        get("tflite").export(spec, tmp_path / "cached.tflite")
    assert traced == [["seq_16"], ["seq_32"]]  # the second file's seq_16 came from the cache
    cached = (tmp_path / "cached.tflite").read_bytes()
    examples = _examples(spec, (16, 32))
    assert list(Interpreter(model_content=cached).get_signature_list()) == ["seq_16", "seq_32"]
    assert signatures.same_outputs(cached, dict.fromkeys(examples, one_export), examples)  # as one export, bit for bit
    (tmp_path / "one.tflite").write_bytes(one_export)
    assert op_histogram(tmp_path / "cached.tflite") == op_histogram(tmp_path / "one.tflite")
