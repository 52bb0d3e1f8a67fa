"""Output safety: what --overwrite may replace, crash-safe swaps, full and read-only disks, file modes.

Real directories throughout; the crash and disk-full cases run ``python -m converter`` in a subprocess
(a crash is a SIGKILL the process sends itself between two steps of the swap; a full disk is a small
tmpfs, mounted only when running as root).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pocketbert.converter import cli
from pocketbert.converter.errors import EXIT_OK, EXIT_OUTPUT, OutputError
from pocketbert.runtime.contract import STAGING_MARKER, write_manifest

from .conftest import DATA, REPO

TINY = ["--format", "onnx", "--verify-samples", "10", "--no-latency"]


# --- helpers ---------------------------------------------------------------------------------

def fake_bundle(directory: Path, extra: dict[str, bytes] | None = None) -> Path:
    """A directory laid out as a bundle: files listed by a manifest.json (no model in them)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(b"\x08\x07 old model")
    (directory / "vocab.txt").write_text("[PAD]\nold\n", encoding="utf-8")
    write_manifest(directory, {"schema_version": 1, "pocketbert_version": "0.1.0", "artifacts": []})
    for name, data in (extra or {}).items():
        (directory / name).write_bytes(data)
    return directory


def tree(directory: Path) -> dict[str, bytes | None]:
    """relative path -> content (None for a directory) of everything below ``directory``."""
    return {str(p.relative_to(directory)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(directory.rglob("*"))}


def siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def assert_complete_bundle(out: Path) -> dict:
    """``out`` holds manifest.json and exactly the files it lists, each with its recorded sha256."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(p.name for p in out.iterdir()) == sorted([*manifest["files"], "manifest.json"])
    for name, entry in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == entry["sha256"], name
    return manifest


def run_converter(args: list[str], *, prelude: str = "", umask: int | None = None, cwd: Path = REPO):
    """``python -m converter ARGS`` in a subprocess; ``prelude`` runs first (to inject a crash)."""
    code = prelude + "\nimport sys\nfrom pocketbert.converter.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


@pytest.fixture
def checkpoint(checkpoints) -> Path:
    return checkpoints["bert"]["classification"]


def convert_cli(checkpoint: Path, out: Path, *extra: str, tmp: Path) -> int:
    return cli.main([str(checkpoint), "--out", str(out), *TINY, "--data-dir", str(tmp), *extra])


# --- 1: --overwrite replaces only what PocketBERT wrote ----------------------------------------

def test_overwrite_refuses_a_project_directory_given_as_dot(checkpoint, tmp_path, monkeypatch, capsys):
    project = tmp_path / "myproject"
    (project / "src").mkdir(parents=True)
    (project / "train.py").write_text("print('mine')\n", encoding="utf-8")
    (project / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (project / "src" / "lib.py").write_text("x = 1\n", encoding="utf-8")
    before = tree(project)
    monkeypatch.chdir(project)
    assert convert_cli(checkpoint, Path("."), "--overwrite", tmp=tmp_path) == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert "train.py" in err and "data.csv" in err and "src/" in err and "Traceback" not in err
    assert "not a PocketBERT bundle" in err
    assert tree(project) == before
    assert siblings(project) == []


def test_overwrite_refuses_a_directory_with_a_subfolder(checkpoint, tmp_path, capsys):
    out = tmp_path / "bundle"
    (out / "sub").mkdir(parents=True)
    (out / "old.txt").write_text("previous content\n", encoding="utf-8")
    (out / "sub" / "model.onnx").write_bytes(b"\x08\x01" * 50)
    before = tree(out)
    assert convert_cli(checkpoint, out, "--overwrite", tmp=tmp_path) == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert "old.txt" in err and "sub/" in err and "fix:" in err
    assert tree(out) == before and siblings(out) == []


@pytest.mark.parametrize("case", ["extra-file", "extra-dir", "symlink", "manifest-not-json", "manifest-no-files"])
def test_overwrite_refuses_a_bundle_holding_anything_else(checkpoint, tmp_path, capsys, case):
    out = fake_bundle(tmp_path / "bundle")
    needle = {"extra-file": "notes.txt", "extra-dir": "photos/", "symlink": "link.txt",
              "manifest-not-json": "manifest.json", "manifest-no-files": "manifest.json"}[case]
    if case == "extra-file":
        (out / "notes.txt").write_text("my notes\n", encoding="utf-8")
    elif case == "extra-dir":
        (out / "photos").mkdir()
    elif case == "symlink":
        (tmp_path / "elsewhere.txt").write_text("keep\n", encoding="utf-8")
        (out / "link.txt").symlink_to(tmp_path / "elsewhere.txt")
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["files"]["link.txt"] = {"bytes": 5, "sha256": "0" * 64}  # listed, but a symlink
        (out / "manifest.json").write_text(json.dumps(manifest))
    elif case == "manifest-not-json":
        (out / "manifest.json").write_text("{not json", encoding="utf-8")
    else:
        (out / "manifest.json").write_text('{"schema_version": 1}', encoding="utf-8")
    before = tree(out)
    assert convert_cli(checkpoint, out, "--overwrite", tmp=tmp_path) == EXIT_OUTPUT
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert tree(out) == before and siblings(out) == []


def test_overwrite_replaces_an_earlier_bundle(checkpoint, tmp_path):
    out = fake_bundle(tmp_path / "bundle")
    assert convert_cli(checkpoint, out, "--overwrite", tmp=tmp_path) == EXIT_OK
    manifest = assert_complete_bundle(out)
    assert manifest["artifacts"] and "model.onnx" in manifest["files"]
    assert siblings(out) == []


@pytest.mark.parametrize("where", ["root", "home", "cwd-ancestor", "cwd"])
def test_overwrite_never_replaces_root_home_or_the_working_directory(checkpoint, tmp_path, monkeypatch, capsys,
                                                                     where):
    home = fake_bundle(tmp_path / "home")  # looks like a bundle: only the location may refuse it
    work = fake_bundle(tmp_path / "work")
    (tmp_path / "tree" / "a" / "b").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path / "tree" / "a" / "b")
    out = {"root": Path("/"), "home": Path("~").expanduser(), "cwd-ancestor": Path("../.."), "cwd": work}[where]
    if where == "cwd":
        monkeypatch.chdir(work)
        out = Path(".")
    watched = {"root": REPO, "home": home, "cwd-ancestor": tmp_path / "tree", "cwd": work}[where]
    before = tree(watched) if where != "root" else sorted(p.name for p in Path("/").iterdir())
    assert convert_cli(checkpoint, out, "--overwrite", tmp=tmp_path) == EXIT_OUTPUT
    assert "Traceback" not in capsys.readouterr().err
    after = tree(watched) if where != "root" else sorted(p.name for p in Path("/").iterdir())
    assert after == before


def test_files_added_to_the_earlier_bundle_during_a_run_are_not_deleted(tmp_path):
    from pocketbert.converter.output.staging import Staging

    out = fake_bundle(tmp_path / "bundle")
    with pytest.raises(OutputError) as info:
        with Staging(out, overwrite=True) as staging:
            (staging.path / "model.onnx").write_bytes(b"new")
            (out / "notes.txt").write_text("written while the conversion ran\n", encoding="utf-8")
            staging.commit()
    assert "notes.txt" in info.value.problem
    assert (out / "notes.txt").is_file() and (out / "model.onnx").read_bytes() == b"\x08\x07 old model"
    assert siblings(out) == []


def test_convert_does_not_replace_a_checkpoint(checkpoint, tmp_path, capsys):
    trained = written_checkpoint(checkpoint, tmp_path / "trained")
    before = tree(trained)
    assert convert_cli(checkpoint, trained, "--overwrite", tmp=tmp_path) == EXIT_OUTPUT
    # the console wraps the message where the path's length puts the break
    assert "it is a PocketBERT checkpoint, not a bundle" in " ".join(capsys.readouterr().err.split())
    assert tree(trained) == before


def written_checkpoint(source: Path, out: Path, overwrite: bool = False, card: str = "# card\n") -> Path:
    """A checkpoint directory written the way finetune/recover/trim-vocab write theirs."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.training.save import save_trained

    loaded = loading.load(str(source))
    return save_trained(loaded.model, loaded.tokenizer, out, overwrite=overwrite,
                        record={"kind": "finetune", "task": "glue:sst2"}, card=card)


def test_checkpoint_writers_replace_their_own_checkpoint(checkpoint, tmp_path):
    out = written_checkpoint(checkpoint, tmp_path / "trained")
    written_checkpoint(checkpoint, out, overwrite=True, card="# card, second run\n")
    assert (out / "README.md").read_text() == "# card, second run\n"
    record = json.loads((out / "training.json").read_text())
    assert sorted(record["files"]) == sorted(p.name for p in out.iterdir() if p.name != "training.json")
    for name, entry in record["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == entry["sha256"], name
    assert siblings(out) == []


@pytest.mark.parametrize("case", ["plain-directory", "bundle", "checkpoint-with-user-file"])
def test_checkpoint_writers_refuse_anything_else(checkpoint, tmp_path, case):
    out = tmp_path / "target"
    if case == "plain-directory":
        out.mkdir()
        (out / "thesis.tex").write_text("\\documentclass{article}\n", encoding="utf-8")
    elif case == "bundle":
        fake_bundle(out)
    else:
        written_checkpoint(checkpoint, out)
        (out / "thesis.tex").write_text("\\documentclass{article}\n", encoding="utf-8")
    before = tree(out)
    with pytest.raises(OutputError) as info:
        written_checkpoint(checkpoint, out, overwrite=True)
    assert info.value.exit_code == EXIT_OUTPUT and info.value.fix
    assert ("thesis.tex" if case != "bundle" else "a PocketBERT bundle, not a checkpoint") in info.value.problem
    assert tree(out) == before and siblings(out) == []


@pytest.mark.parametrize("command", ["finetune", "trim-vocab", "recover", "share-embeddings"])
def test_checkpoint_commands_refuse_a_project_directory(checkpoint, tmp_path, capsys, command):
    out = tmp_path / "project"
    (out / "src").mkdir(parents=True)
    (out / "train.py").write_text("print('mine')\n", encoding="utf-8")
    before = tree(out)
    args = {"finetune": [], "trim-vocab": ["--size", "500"], "recover": ["--opt", "relu"],
            "share-embeddings": []}[command]
    code = cli.main([command, str(checkpoint), "--task", "glue:sst2", "--data-dir", str(DATA), "--train-limit", "8",
                     "--out", str(out), "--overwrite", *args])
    err = capsys.readouterr().err
    assert code == EXIT_OUTPUT, err
    assert "train.py" in err and "src/" in err
    assert tree(out) == before


# --- 2: a killed swap is finished or undone by the next run ----------------------------------

KILL_AFTER_BACKUP = textwrap.dedent("""
    import os, signal
    from pathlib import Path
    from pocketbert.converter.output import staging
    staging._exchange = lambda a, b: False  # the two-rename swap, as on file systems without RENAME_EXCHANGE
    real_rename = staging._rename
    def rename(src, dst):
        real_rename(src, dst)
        if ".old-" in Path(dst).name:  # the earlier bundle is set aside, the new one not yet in place
            os.kill(os.getpid(), signal.SIGKILL)
    staging._rename = rename
""")

KILL_AFTER_EXCHANGE = textwrap.dedent("""
    import os, signal
    from pocketbert.converter.output import staging
    real_exchange = staging._exchange
    def exchange(a, b):
        assert real_exchange(a, b)
        os.kill(os.getpid(), signal.SIGKILL)  # before the earlier bundle is removed
    staging._exchange = exchange
""")


def test_kill_between_the_renames_is_finished_by_the_next_run(checkpoint, tmp_path):
    out = fake_bundle(tmp_path / "bundle")
    killed = run_converter([str(checkpoint), "--out", str(out), "--overwrite", *TINY, "--data-dir",
                            str(tmp_path)], prelude=KILL_AFTER_BACKUP)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not out.exists()  # the crash hit where it was aimed: between the two renames
    assert any(".old-" in n for n in siblings(out)) and any(".ready-" in n for n in siblings(out))

    # the next run first completes the swap (the new bundle was complete), then refuses: no --overwrite
    assert convert_cli(checkpoint, out, tmp=tmp_path) == EXIT_OUTPUT
    manifest = assert_complete_bundle(out)
    assert manifest["artifacts"], "the killed run's new bundle, not the earlier one"
    assert siblings(out) == []


def test_kill_after_the_exchange_leaves_the_new_bundle_and_the_next_run_cleans_up(checkpoint, tmp_path):
    out = fake_bundle(tmp_path / "bundle")
    killed = run_converter([str(checkpoint), "--out", str(out), "--overwrite", *TINY, "--data-dir",
                            str(tmp_path)], prelude=KILL_AFTER_EXCHANGE)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    marker = out / STAGING_MARKER  # the killed run's: the kill came before its removal too
    kept = marker.read_bytes()
    assert json.loads(kept)["dest"] == out.name
    marker.unlink()
    assert assert_complete_bundle(out)["artifacts"]  # atomic: the new bundle is already in place
    marker.write_bytes(kept)  # put back: the next run removes it
    assert siblings(out), "the earlier bundle is still beside it (the kill came before its removal)"
    assert convert_cli(checkpoint, out, tmp=tmp_path) == EXIT_OUTPUT  # no --overwrite: only the clean-up runs
    assert assert_complete_bundle(out)["artifacts"]
    assert siblings(out) == []


def test_stale_staging_of_dead_runs_is_removed_and_live_or_foreign_ones_kept(tmp_path):
    from pocketbert.converter.output.leftovers import mark
    from pocketbert.converter.output.staging import Staging

    out = tmp_path / "bundle"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    token = "0123456789abcdef"
    try:
        # name -> (marked by the run its name gives, removed)
        names = {f".bundle.partial-{dead.pid}-{token}": (True, True), f".bundle.ready-{dead.pid}-{token}": (True, False),
                 f".bundle.partial-{live.pid}-{token}": (True, False), f".bundle.old-{live.pid}-{token}": (True, False),
                 f".bundle.old-{dead.pid}-{token}": (False, False), f".bundle.partial-{dead.pid}-ab12_x": (False, False),
                 f".bundle.ready-{dead.pid}": (False, False), ".bundle.partial-abc": (False, False),
                 ".bundle.training": (False, False), ".bundle.old-12x": (False, False)}
        for name, (marked, _) in names.items():
            (tmp_path / name).mkdir()
            (tmp_path / name / "f").write_text("x", encoding="utf-8")
            if marked:
                mark(tmp_path / name, out, int(name.split("-")[1]), token)
        with pytest.raises(OutputError, match="not empty"):  # out was missing: the dead run's complete
            Staging(out, overwrite=False)                     # directory is moved in, then it is not empty
        assert sorted(p.name for p in out.iterdir()) == ["f"]  # its marker removed
        assert siblings(out) == sorted(n for n, (_, removed) in names.items() if not removed
                                       and n != f".bundle.ready-{dead.pid}-{token}")
    finally:
        live.kill()
        live.wait()


def test_rename_exchange_swaps_two_directories(tmp_path):
    from pocketbert.converter.output.staging import _exchange

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "new").write_text("new", encoding="utf-8")
    (b / "old").write_text("old", encoding="utf-8")
    if not _exchange(a, b):
        pytest.skip("this file system has no RENAME_EXCHANGE (the two-rename swap is used)")
    assert [p.name for p in b.iterdir()] == ["new"] and [p.name for p in a.iterdir()] == ["old"]


# --- 3: full and read-only file systems --------------------------------------------------------

@contextlib.contextmanager
def tmpfs(mount: Path, options: str):
    """A tmpfs mounted at ``mount`` for the block; the test is skipped where it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs: room for the tokenizer files, not for the model."""
    with tmpfs(tmp_path / "disk", "size=2m") as mount:
        yield mount


def assert_disk_full_reported(result, out: Path) -> None:
    err = result.stderr
    assert result.returncode == EXIT_OUTPUT, err
    assert "Traceback" not in err and "space" in err and "MB" in err and "estimate" in err, err
    assert "fix:" in err
    assert not out.exists() and siblings(out) == []


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_full_disk_is_an_output_error(checkpoint, small_disk, tmp_path, fmt):
    out = small_disk / "bundle"
    buckets = ["--buckets", "32"] if fmt == "tflite" else []
    result = run_converter([str(checkpoint), "--out", str(out), "--format", fmt, *buckets, "--verify-samples", "10",
                            "--no-latency", "--data-dir", str(tmp_path)])
    assert_disk_full_reported(result, out)


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_disk_filling_up_during_the_export_is_an_output_error(checkpoint, small_disk, tmp_path, fmt, fresh_exports):
    """Space that runs out after the up-front check (another program filling the disk) is reported alike,
    by the exporters' own writes too (the TFLite exporter's writer used to exit the process silently)."""
    prelude = ("import shutil, types\n"  # the up-front check sees a roomy disk
               "shutil.disk_usage = lambda path: types.SimpleNamespace(total=1 << 40, used=0, free=1 << 40)\n")
    out = small_disk / "bundle"
    buckets = ["--buckets", "32"] if fmt == "tflite" else []
    result = run_converter([str(checkpoint), "--out", str(out), "--format", fmt, *buckets, "--verify-samples", "10",
                            "--no-latency", "--data-dir", str(tmp_path)], prelude=prelude)
    assert_disk_full_reported(result, out)
    assert "No space left on device" in result.stderr


def test_no_space_inside_staging_names_the_estimate(small_disk):
    from pocketbert.converter.output.staging import Staging

    out = small_disk / "bundle"
    with pytest.raises(OutputError) as info:
        with Staging(out, overwrite=False) as staging:
            staging.reserve(1_000_000, "test data")
            (staging.path / "big").write_bytes(b"\0" * (3 << 20))
    assert "No space left on device" in info.value.problem and "1.0 MB" in info.value.problem
    assert info.value.fix and not out.exists() and siblings(out) == []


def test_read_only_file_system_is_named(checkpoint, tmp_path, capsys):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as mount:
        assert convert_cli(checkpoint, mount / "bundle", tmp=tmp_path) == EXIT_OUTPUT
        err = capsys.readouterr().err
        assert "read-only file system" in err and "permission denied" not in err.lower()


# --- 4: bundles and checkpoints follow the umask -----------------------------------------------

def modes(directory: Path) -> set[int]:
    return {stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}


@pytest.mark.parametrize("umask, directory_mode, file_mode", [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_bundle_follows_the_umask(checkpoint, tmp_path, umask, directory_mode, file_mode):
    out = tmp_path / "bundle"
    result = run_converter([str(checkpoint), "--out", str(out), *TINY, "--data-dir", str(tmp_path)],
                           umask=umask)
    assert result.returncode == EXIT_OK, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == directory_mode
    assert modes(out) == {file_mode}


@pytest.mark.parametrize("umask, directory_mode, file_mode", [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_checkpoint_follows_the_umask(checkpoint, tmp_path, umask, directory_mode, file_mode):
    old = os.umask(umask)
    try:
        out = written_checkpoint(checkpoint, tmp_path / "trained")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == directory_mode
    assert modes(out) == {file_mode}
