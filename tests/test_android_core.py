"""The Android demo (android_demo/): its Java core held to the Python runtime, and its bundle copy script.

``android_demo/core/run_tests.sh`` compiles the core and its JUnit 5 tests with javac and runs them:
every golden vector (tokenization, NER decoding with every aggregation, classification), thousands of
random texts tokenized by this runtime and by Java, manifests and pipelines of bundles converted here
with their LiteRT outputs replayed. Running it here puts the Java code under the project's test
command (and CI); a missing JDK or JUnit is a failure, not a skip.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pocketbert.converter.output.cut import cut

from .runtime.conftest import cls_bundle  # noqa: F401  (session fixture: a small real bundle)
from .test_web_demo import sst2_phone_bundle

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "android_demo"
CORE = DEMO / "core"
#: the suite holds ~700 tests (one per golden record and aggregation); far fewer means tests went missing
MIN_PASSED = 600


@pytest.fixture(scope="module")
def java_run(tmp_path_factory):
    """run_tests.sh, once: (completed process, its work directory with the converted bundles)."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    assert not missing, (f"{' and '.join(missing)} not found: the Android core's tests need a JDK 17 "
                         "(Debian: apt-get install -y openjdk-17-jdk-headless)")
    work = tmp_path_factory.mktemp("android-core")
    env = {**os.environ, "POCKETBERT_PYTHON": sys.executable}
    # the sst2-phone bundle the browser tests use (the same model, buckets and int4 file), not a second conversion
    phone = sst2_phone_bundle(tmp_path_factory)
    done = subprocess.run([str(CORE / "run_tests.sh"), "--work-dir", str(work), "--sst2-phone", str(phone)],
                          capture_output=True, text=True, env=env, timeout=1800)
    return done, work


def test_java_core_passes_its_tests(java_run):
    done, _ = java_run
    lines = done.stdout.strip().splitlines()
    summary = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1]) if lines else None
    log = "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-60:])
    assert summary, f"run_tests.sh did not run the tests (exit code {done.returncode}):\n{log}"
    passed, failed = map(int, summary.groups())
    assert failed == 0 and done.returncode == 0, f"{failed} Java test(s) failed:\n{log}"
    assert passed >= MIN_PASSED, f"only {passed} Java tests ran (expected at least {MIN_PASSED}):\n{log}"


def test_unicode_tables_match_the_runtime_tokenizer():
    """The Java tokenizer's Unicode tables are probed from `tokenizers`; an upgrade that changes them must be seen."""
    done = subprocess.run([sys.executable, str(CORE / "tools" / "make_unicode_tables.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def _copy(bundle: Path, assets: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(DEMO / "copy_bundle.sh"), str(bundle), "--assets", str(assets), *options],
                          capture_output=True, text=True, timeout=120)


def test_copy_bundle_puts_one_verified_model_per_task_into_the_assets(java_run, tmp_path):
    _, work = java_run
    ner, cls = work / "pipeline" / "ner-bundle", work / "pipeline" / "cls-bundle"
    assert ner.is_dir() and cls.is_dir(), "run_tests.sh converted no bundles (see test_java_core_passes_its_tests)"
    assets = tmp_path / "assets"
    for bundle, task, model in ((ner, "ner", "model.int8-static.tflite"), (cls, "classification",
                                                                             "model.int8-dynamic.tflite")):
        done = _copy(bundle, assets)
        assert done.returncode == 0, done.stderr
        copied = assets / task
        assert sorted(p.name for p in copied.iterdir()) == sorted(["manifest.json", "vocab.txt", "labels.txt", model])
        for p in copied.iterdir():
            assert p.read_bytes() == (bundle / p.name).read_bytes(), p.name
    done = _copy(ner, assets, "--precision", "fp32")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (assets / "ner").iterdir()) == ["labels.txt", "manifest.json", "model.tflite",
                                                                 "vocab.txt"]


def test_copy_bundle_takes_a_cut_bundle_and_copies_what_it_copies_from_the_full_one(cls_bundle, tmp_path):
    """A bundle cut for the phone holds one TFLite model, the one the script would choose: it copies that
    model, vocab.txt and labels.txt, byte for byte the files it copies from the full bundle, and the cut's
    manifest, which lists only what was kept."""
    phone = cut(cls_bundle, "phone", tmp_path / "phone").path
    full, from_cut = tmp_path / "full-assets", tmp_path / "cut-assets"
    for bundle, assets in ((cls_bundle, full), (phone, from_cut)):
        done = _copy(bundle, assets)
        assert done.returncode == 0, done.stderr
        assert "(tflite:int8-dynamic)" in done.stdout
    copied = sorted(p.name for p in (from_cut / "classification").iterdir())
    assert copied == ["labels.txt", "manifest.json", "model.int8-dynamic.tflite", "vocab.txt"]
    for name in copied:
        assert (from_cut / "classification" / name).read_bytes() == (phone / name).read_bytes(), name
        if name != "manifest.json":
            assert (from_cut / "classification" / name).read_bytes() == (full / "classification" / name).read_bytes()
    listed = json.loads((from_cut / "classification" / "manifest.json").read_text(encoding="utf-8"))
    assert [a["recipe"] for a in listed["artifacts"]] == ["tflite:int8-dynamic"]
    done = _copy(phone, tmp_path / "assets", "--precision", "fp32")  # what the cut left out, asked for
    assert done.returncode == 3 and "no verified tflite:fp32 model" in done.stderr and "tflite:int8-dynamic" in done.stderr


def test_copy_bundle_copies_the_int4_file_when_asked_or_from_a_phone_cut_keeping_it(java_run, tmp_path):
    """A bundle converted with int8 and int4 (run_tests.sh's classification bundle, its word embeddings factored as
    the phone-sized models' are): int8 ranks first, so the int4 file is copied with --precision int4-dynamic, or by
    default from the phone cut that kept it (Int4ArtifactTest loads that cut as the app does), byte for byte the
    converter's file."""
    _, work = java_run
    full, phone = work / "pipeline" / "cls-bundle", work / "pipeline" / "cls-int4-phone"
    int4 = "model.int4-dynamic.tflite"
    # the bundle's model has factored word embeddings, as the phone-sized demo's: the files the core loads hold them
    config = json.loads((work / "pipeline" / "cls-checkpoint" / "config.json").read_text(encoding="utf-8"))
    assert config["pocketbert"]["word_embedding_rank"] == 8
    assert (full / int4).is_file() and (full / "model.int8-dynamic.tflite").is_file(), sorted(full.iterdir())
    done = _copy(full, tmp_path / "default")
    assert done.returncode == 0 and "(tflite:int8-dynamic)" in done.stdout, done.stderr
    for bundle, options in ((full, ("--precision", "int4-dynamic")), (phone, ())):
        assets = tmp_path / bundle.name
        done = _copy(bundle, assets, *options)
        assert done.returncode == 0 and "(tflite:int4-dynamic)" in done.stdout, done.stderr
        copied = assets / "classification"
        assert sorted(p.name for p in copied.iterdir()) == ["labels.txt", "manifest.json", int4, "vocab.txt"]
        assert (copied / int4).read_bytes() == (full / int4).read_bytes()
    listed = json.loads((tmp_path / phone.name / "classification" / "manifest.json").read_text(encoding="utf-8"))
    assert [a["recipe"] for a in listed["artifacts"]] == ["tflite:int4-dynamic"]
    assert listed["files"][int4]["sha256"] == hashlib.sha256((full / int4).read_bytes()).hexdigest()


def test_copy_bundle_refuses_a_damaged_or_unsuitable_bundle(java_run, tmp_path):
    _, work = java_run
    damaged = shutil.copytree(work / "pipeline" / "ner-bundle", tmp_path / "damaged")
    vocab = bytearray((damaged / "vocab.txt").read_bytes())
    vocab[10] ^= 1
    (damaged / "vocab.txt").write_bytes(bytes(vocab))
    assets = tmp_path / "assets"
    (assets / "ner").mkdir(parents=True)
    (assets / "ner" / "keep.txt").write_text("the previous bundle")
    done = _copy(damaged, assets)
    assert done.returncode == 3 and "vocab.txt does not match the manifest's size and SHA-256" in done.stderr
    assert (assets / "ner" / "keep.txt").exists(), "a refused bundle must not replace the one in the assets"
    done = _copy(work / "pipeline" / "cls-bundle", assets, "--precision", "int8-static")
    assert done.returncode == 3 and "no verified tflite:int8-static model" in done.stderr
    done = _copy(tmp_path / "not-a-bundle", assets)
    assert done.returncode == 3 and "has no manifest.json" in done.stderr


def _relist(bundle: Path, name: str, path: Path) -> None:
    """List ``path`` under ``name`` in the manifest, size and SHA-256 included: a hostile manifest vouches for it."""
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    data = path.read_bytes()
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_copy_bundle_refuses_names_and_links_leading_outside_the_bundle(java_run, tmp_path):
    """A manifest naming ../evil.tflite made the script read a file outside the bundle and write it outside the
    task's asset folder; a model symlinked outside was copied into the app."""
    _, work = java_run
    bundle = shutil.copytree(work / "pipeline" / "ner-bundle", tmp_path / "bundle")
    evil = tmp_path / "evil.tflite"
    shutil.copy(bundle / "model.tflite", evil)
    text = (bundle / "manifest.json").read_text(encoding="utf-8")
    (bundle / "manifest.json").write_text(text.replace('"file": "model.tflite"', '"file": "../evil.tflite"', 1),
                                          encoding="utf-8")
    _relist(bundle, "../evil.tflite", evil)
    assets = tmp_path / "assets"
    done = _copy(bundle, assets, "--precision", "fp32")
    assert done.returncode == 3 and "artifacts[0].file '../evil.tflite' leads outside the bundle" in done.stderr
    assert not assets.exists(), "nothing may be written for a refused bundle"

    bundle = shutil.copytree(work / "pipeline" / "ner-bundle", tmp_path / "linked")
    (bundle / "model.tflite").unlink()
    (bundle / "model.tflite").symlink_to(evil)  # the same bytes: only the link gives it away
    done = _copy(bundle, assets, "--precision", "fp32")
    assert done.returncode == 3 and "artifacts[0].file 'model.tflite' leads outside the bundle" in done.stderr
    assert not assets.exists()
