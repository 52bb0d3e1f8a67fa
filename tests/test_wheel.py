"""The wheel is whole and polite: built with pip, installed into a fresh venv, it converts ``sst2-demo`` from a
directory outside the repository and runs the result, and adds one import name (``pocketbert``) to site-packages.

The fresh venv borrows the test venv's dependencies (torch, transformers, …) through a ``.pth`` line, so
nothing is downloaded or reinstalled; that line adds a plain directory, whose own ``.pth`` files (among them
the editable install of this checkout) Python does not run, and the test checks that ``pocketbert`` is
imported from the fresh venv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = ("pocketbert-convert", "pocketbert-run", "pocketbert-bench")
GENERIC = ("converter", "runtime", "benchmarks", "demo_models")
# what setuptools needs to build: never the ignored caches (hundreds of MB) or the checkout's build/ output
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".cache", "results", "*.egg-info", "build")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``pip wheel . --no-deps`` on a copy of the working tree (the build writes build/ and *.egg-info)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "pocketbert", source / "pocketbert", ignore=SKIP)
    # no build isolation: offline, with the setuptools of the test venv (checked against [build-system])
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
          "--check-build-dependencies", "-q", "-w", str(tmp / "dist")], cwd=tmp)
    shutil.rmtree(source)  # 44 MB of demo models: pytest keeps the last runs' temporary directories
    (built,) = (tmp / "dist").glob("pocketbert-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel (installed --no-deps), then given the test venv's dependencies."""
    root = tmp_path_factory.mktemp("venv") / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    site = _site_packages(root)
    before = _import_names(site)
    _run([sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install", "--no-deps",
          "--no-index", "-q", str(wheel)])
    assert _import_names(site) - before == {"pocketbert"}
    # after the install: pip must not see (and offer to replace) the test venv's editable pocketbert
    (site / "test-venv-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return root


def test_wheel_carries_the_demo_models_and_one_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"pocketbert", wheel.name.split("-py3")[0] + ".dist-info"}
    for demo in ("sst2-minilm-nonorm-relu", "conll2003-minilm-nonorm-relu"):
        for file in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            assert f"pocketbert/demo_models/{demo}/{file}" in names
    assert "pocketbert/converter/resources/calibration_en.txt" in names
    assert not [n for n in names if "/results/" in n or "/.cache/" in n]


def test_installed_package_is_the_wheel_and_no_generic_name(venv, tmp_path):
    probe = ("import importlib.util, pocketbert; print(pocketbert.__file__); "
             f"print([n for n in {GENERIC!r} if importlib.util.find_spec(n)])")
    out = _run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path, env=_env(venv)).stdout.splitlines()
    assert Path(out[0]).is_relative_to(_site_packages(venv)), out[0]
    assert out[1] == "[]", f"generic top-level names importable: {out[1]}"


def test_console_scripts_run(venv, tmp_path):
    for script in SCRIPTS:
        done = _run([str(venv / "bin" / script), "--help"], cwd=tmp_path, env=_env(venv))
        assert "Usage:" in done.stdout, script
    # the installed benchmarks write under the current directory, never into site-packages
    done = _run([str(venv / "bin" / "pocketbert-bench"), "report", "--help"], cwd=tmp_path, env=_env(venv))
    unwrapped = "".join(done.stdout.split())  # click wraps long defaults, even inside a path
    assert f"[default:{tmp_path / 'pocketbert-benchmarks' / 'REPORT.md'}]" in unwrapped


def test_installed_wheel_converts_and_runs_sst2_demo(venv, tmp_path):
    site = _site_packages(venv)
    files_before = _files(site)
    env = _env(venv)
    convert = _run([str(venv / "bin" / "pocketbert-convert"), "sst2-demo", "--format", "onnx", "--verify-samples",
                    "10", "--no-latency", "--threads", "1", "-o", "bundle"], cwd=tmp_path, env=env)
    # installed, with no data directory: verification falls back to the packaged sentences, and says so
    assert "built-in" in convert.stdout + convert.stderr
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert [a["recipe"] for a in manifest["artifacts"]] == ["onnx:fp32"]
    run = _run([str(venv / "bin" / "pocketbert-run"), "bundle", "a wonderful, moving film", "a dull, lifeless mess",
                "--output", "jsonl"], cwd=tmp_path, env=env)
    labels = [json.loads(line)["labels"][0]["label"] for line in run.stdout.splitlines()]
    assert labels == ["positive", "negative"]
    assert _files(site) == files_before, "the installed package wrote into site-packages"
    shutil.rmtree(tmp_path / "bundle")  # 92 MB; kept only when an assertion above failed


def _run(command, cwd=None, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def _env(venv: Path) -> dict:
    """The fresh venv first on PATH; nothing pointing back at the checkout or the data directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "POCKETBERT_DATA", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONNOUSERSITE": "1",
            "HF_HUB_OFFLINE": "1"}


def _site_packages(venv: Path) -> Path:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    return site


def _import_names(site: Path) -> set[str]:
    """Top-level names ``import`` can find in ``site``: packages and modules, not metadata or .pth files."""
    names = set()
    for entry in site.iterdir():
        if entry.is_dir() and not entry.name.endswith((".dist-info", ".data")) and entry.name != "__pycache__":
            names.add(entry.name)
        elif entry.suffix in (".py", ".so", ".pyd"):
            names.add(entry.name.split(".")[0])
    return names


def _files(site: Path) -> set[str]:
    return {str(p.relative_to(site)) for p in site.rglob("*") if "__pycache__" not in p.parts}
