"""The wheel is whole, lean and polite: built with pip from a copy of the working tree, it holds the package's
code and nothing else (no checkpoints, results or caches), and installed into a fresh venv it adds one import
name (``pocketbert``), runs a bundle and the docs' commands from a folder outside the checkout, and says how
to get the demo models it does not carry.

The fresh venv borrows the test venv's dependencies (onnxruntime, torch, …) through a ``.pth`` line, so
nothing is downloaded or reinstalled; that line adds a plain directory, whose own ``.pth`` files (among them
the editable install of the checkout) Python does not run, and the test checks that ``pocketbert`` is
imported from the fresh venv."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from pocketbert import runtime
from pocketbert.converter.builtin import BUILTIN
from pocketbert.converter.errors import EXIT_INPUT

from .doc_commands import SCRIPTS, commands, words
from .runtime.conftest import cls_bundle  # noqa: F401  (session fixture: a small real bundle)

REPO = Path(__file__).resolve().parents[1]
GENERIC = ("converter", "runtime", "benchmarks", "demo_models")
# the work files of a checkout's benchmarks: hundreds of MB, never copied (a small one is planted instead)
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".cache", "*.egg-info", "build")
PACKAGE_DATA = {"pocketbert/converter/inputs/resources/calibration_en.txt"}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the working tree as a build sees it: the demo checkpoints and committed results included,
    and a planted benchmark cache, so that leaving them out of the wheel is the configuration's doing."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "pocketbert", source / "pocketbert", ignore=SKIP)
    cached = source / "pocketbert" / "benchmarks" / ".cache" / "bundles" / "tiny"
    cached.mkdir(parents=True)
    (cached / "manifest.json").write_text("{}")
    assert list((source / "pocketbert" / "demo_models").rglob("*.safetensors"))
    assert list((source / "pocketbert" / "benchmarks" / "results").glob("*.json"))
    yield source
    shutil.rmtree(source)  # 44 MB of demo models: pytest keeps the last runs' temporary directories


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    # no build isolation: offline, with the setuptools of the test venv (checked against [build-system])
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
          "--check-build-dependencies", "-q", "-w", str(dist)], cwd=dist)
    (built,) = dist.glob("pocketbert-*.whl")
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


def test_the_wheel_holds_the_code_and_no_checkpoints_results_or_caches(wheel, source):
    names = [n for n in zipfile.ZipFile(wheel).namelist() if not n.endswith("/")]
    assert {n.split("/")[0] for n in names} == {"pocketbert", wheel.name.split("-py3")[0] + ".dist-info"}
    files = {n for n in names if n.startswith("pocketbert/")}
    assert not [n for n in files if n.endswith(".safetensors") or re.search(r"/(demo_models|results|\.cache)/", n)]
    assert {n for n in files if not n.endswith(".py")} == PACKAGE_DATA
    # every module of the checkout, so no folder of code was left out for lacking an __init__.py
    assert {n for n in files if n.endswith(".py")} == \
        {str(p.relative_to(source)) for p in (source / "pocketbert").rglob("*.py")}
    folders = {n.rsplit("/", 1)[0] for n in files if n.endswith(".py")}
    assert sorted(f for f in folders if f"{f}/__init__.py" not in files) == []
    assert wheel.stat().st_size < 2e6, f"the wheel is {wheel.stat().st_size / 1e6:.1f} MB"


def test_installed_package_is_the_wheel_and_no_generic_name(venv, tmp_path):
    probe = ("import importlib.util, pocketbert; print(pocketbert.__file__); "
             f"print([n for n in {GENERIC!r} if importlib.util.find_spec(n)])")
    out = _run([venv / "bin" / "python", "-c", probe], cwd=tmp_path, env=_env(venv)).stdout.splitlines()
    assert Path(out[0]).is_relative_to(_site_packages(venv)), out[0]
    assert out[1] == "[]", f"generic top-level names importable: {out[1]}"


def test_the_docs_commands_run_from_any_folder(venv, tmp_path):
    """Each console script and its ``python -m pocketbert.…`` form answers --help from a folder outside the
    checkout, naming itself as typed; every command the docs give a script is one it has."""
    used: dict[str, set[str]] = {script: set() for script in SCRIPTS}
    for _, command in commands():
        argv = words(command)
        if len(argv) > 1 and argv[0] in SCRIPTS:
            used[argv[0]].add(argv[1])
    assert all(used.values()), f"a console script the docs never use: {used}"
    for script, module in SCRIPTS.items():
        for form in ([venv / "bin" / script], [venv / "bin" / "python", "-m", module]):
            typed = script if len(form) == 1 else f"python -m {module}"
            out = _run([*form, "--help"], cwd=tmp_path, env=_env(venv)).stdout
            assert out.startswith(f"Usage: {typed} "), out[:200]
        subcommands = _subcommands(out)
        assert bool(subcommands) == (script != "pocketbert-run"), f"{script}'s commands not read from:\n{out}"
        unknown = sorted(word for word in used[script] if not _is_argument(script, word, subcommands))
        assert unknown == [], f"the docs give {script} commands it does not have"
    # installed, the benchmarks write under the current directory, never into site-packages
    done = _run([venv / "bin" / "pocketbert-bench", "report", "--help"], cwd=tmp_path, env=_env(venv))
    assert f"[default:{tmp_path / 'pocketbert-benchmarks' / 'REPORT.md'}]" in "".join(done.stdout.split())


def test_the_installed_runtime_runs_a_bundle_outside_the_checkout(venv, cls_bundle, tmp_path):  # noqa: F811
    texts = ["a wonderful, moving film", "a dull, lifeless mess"]
    site = _site_packages(venv)
    files_before = _files(site)
    run = _run([venv / "bin" / "pocketbert-run", cls_bundle, *texts, "--output", "jsonl", "--top-k", "3"],
               cwd=tmp_path, env=_env(venv))
    got = [json.loads(line)["labels"] for line in run.stdout.splitlines()]
    expected = runtime.load(cls_bundle)(texts, top_k=3)  # the checkout's runtime, in this process
    assert [[r["label"] for r in row] for row in got] == [[r["label"] for r in row] for row in expected]
    assert [r["score"] for row in got for r in row] == pytest.approx([r["score"] for row in expected for r in row],
                                                                    abs=1e-6)
    assert _files(site) == files_before, "the installed package wrote into site-packages"


def test_the_installed_converter_says_where_the_demo_models_are(venv, tmp_path):
    done = subprocess.run([str(venv / "bin" / "pocketbert-convert"), "sst2-demo", "--format", "onnx", "-o", "b"],
                          cwd=tmp_path, env=_env(venv), capture_output=True, text=True, timeout=300)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == EXIT_INPUT, said[-2000:]
    assert "error: built-in model 'sst2-demo' is a demo checkpoint kept in a checkout" in said
    assert "fix: convert from a checkout of the repository" in said and "give a checkpoint directory" in said
    assert "Traceback" not in said and not (tmp_path / "b").exists()


def test_an_editable_install_finds_the_demo_models(source, tmp_path):
    """Set-up command 1's install (``pip install -e``): the demo models are read from the checkout."""
    root = tmp_path / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    # built by the test venv's setuptools (the fresh venv has none), as pip install -e builds it
    build = "import sys; from setuptools import build_meta; print(build_meta.build_editable(sys.argv[1]))"
    editable = _run([sys.executable, "-c", build, tmp_path], cwd=source).stdout.strip().splitlines()[-1]
    _run([sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install", "--no-deps",
          "--no-index", "-q", str(tmp_path / editable)], cwd=tmp_path)
    (_site_packages(root) / "test-venv-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    probe = "from pocketbert.converter.builtin import BUILTIN; print(BUILTIN['sst2-demo'].path())"
    found = _run([root / "bin" / "python", "-c", probe], cwd=tmp_path, env=_env(root)).stdout.strip()
    assert Path(found) == source / "pocketbert" / "demo_models" / "sst2-minilm-nonorm-relu"


def _subcommands(help_text: str) -> set[str]:
    """The command names a click group's --help lists (none for a single command)."""
    section = help_text.split("\nCommands:\n", 1)[1] if "\nCommands:\n" in help_text else ""
    return {m.group(1) for m in re.finditer(r"^  ([a-z][\w-]*)", section, re.MULTILINE)}


def _is_argument(script: str, word: str, subcommands: set[str]) -> bool:
    """Whether ``word``, the first argument the docs give ``script``, is one it takes: a command of its group,
    or for a script whose default command takes a checkpoint or bundle, a placeholder, path, option or
    built-in model name."""
    if word in subcommands or not subcommands:
        return True
    takes_a_path = script != "pocketbert-bench"
    return takes_a_path and (word.isupper() or "/" in word or word.startswith("-") or word in BUILTIN)


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
