"""An aarch64 Python with LiteRT's ARM build, run under QEMU user-mode emulation (prepared once, cached).

Phones run LiteRT's aarch64 kernels (XNNPACK's NEON, dot-product and i8mm paths), not the x86 ones.
This prepares, outside the repository (``$POCKETBERT_CACHE`` or ``~/.cache/pocketbert``, then
``aarch64/``):

* ``qemu-aarch64-static`` (Debian's ``qemu-user-static``; installed with apt-get when missing, as root);
* a sysroot: Debian's arm64 ``python3.11`` and the libraries it and the wheels link against, downloaded
  with ``apt-get download`` (after ``dpkg --add-architecture arm64``) and unpacked with ``dpkg-deb -x``:
  nothing is installed into this machine's arm64 package database;
* the aarch64 wheels of ``numpy`` and ``ai-edge-litert``, the versions this machine's Python uses,
  fetched with pip (``--platform manylinux2014_aarch64``) into ``site/``.

A ``ready.json`` marker records the versions; a lock serialises concurrent set-ups; a set-up that was
interrupted leaves a ``*.partial`` directory, which the next one removes and starts again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .. import debian_packages
from ..locations import cache_dir
from .emulated_cpus import EmulationUnavailable

QEMU = "qemu-aarch64-static"
PYTHON = "python3.11"
#: the roots of the sysroot; apt resolves the rest (libc6, libexpat1, libffi8, zlib1g, …)
ROOT_PACKAGES = ("python3.11-minimal", "libpython3.11-stdlib", "libstdc++6", "libgcc-s1", "zlib1g")
#: what the worker imports: numpy, and LiteRT's interpreter (which needs numpy only)
WHEELS = ("numpy", "ai-edge-litert")
FORMAT = 1
#: MIDR_EL1 of QEMU's CPU models (target/arm/cpu64.c): the /proc/cpuinfo a phone with that core shows
MIDR = {"cortex-a53": 0x410FD034, "cortex-a76": 0x414FD0B1, "max": 0x000F0510}


@dataclass(frozen=True)
class Environment:
    qemu: str
    sysroot: Path
    site: Path
    versions: dict

    @property
    def python(self) -> Path:
        return self.sysroot / "usr" / "bin" / PYTHON

    def command(self, cpu: str, *args: str) -> list[str]:
        """argv running the aarch64 Python on the emulated ``cpu`` (a QEMU -cpu model), one CPU visible."""
        return [self.qemu, "-L", str(self.cpu_root(cpu)), "-cpu", cpu, str(self.python), "-s", *args]

    def cpu_root(self, cpu: str) -> Path:
        """The sysroot as seen on ``cpu``: its files, plus an ARM /proc/cpuinfo and one CPU in /sys.

        qemu-user (7.2) passes /proc/cpuinfo through from the host; XNNPACK's cpuinfo library cannot parse
        an x86 one and crashes.  QEMU looks up guest paths in the -L prefix first, so this prefix answers
        with what a phone with that core would (MIDR from QEMU's model, features from the emulated HWCAPs).
        """
        root = self.sysroot.parent / "cpus" / cpu.replace(",", "_").replace("=", "-")
        if (root / "proc" / "cpuinfo").is_file():
            return root
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        (partial / "proc").mkdir(parents=True)
        for name in ("usr", "lib", "bin", "etc", "var"):
            if (self.sysroot / name).exists():
                # relative: the first smoke test builds this inside current.partial/, which is then renamed
                (partial / name).symlink_to(os.path.relpath(self.sysroot / name, partial))
        (partial / "proc" / "cpuinfo").write_text(_cpuinfo(MIDR[cpu.split(",")[0]], self.hwcaps(cpu)))
        system = partial / "sys" / "devices" / "system" / "cpu"
        system.mkdir(parents=True)
        for name in ("possible", "present", "online"):
            (system / name).write_text("0\n")
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
        return root

    def hwcaps(self, cpu: str) -> list[str]:
        """The HWCAP names the emulated ``cpu`` reports (its auxiliary vector, as the kernel would give it)."""
        worker = Path(__file__).resolve().with_name("litert_worker.py")
        done = subprocess.run([self.qemu, "-L", str(self.sysroot), "-cpu", cpu, str(self.python), "-s", str(worker),
                               "--hwcaps"],
                              capture_output=True, text=True, env=self.env(), timeout=600)
        if done.returncode != 0:
            raise EmulationUnavailable(f"the aarch64 Python does not start on {cpu}: {done.stderr.strip()[-400:]}",
                                       f"remove {self.sysroot.parent} and run again")
        return done.stdout.split()

    def smopa(self, cpu: str) -> str:
        """Whether the emulated ``cpu`` computes SME's int8 outer product SMOPA right: ok, wrong, or absent.

        QEMU before 8.2.3 and 9.0 (Debian 12's 7.2 included) gets it wrong; XNNPACK runs KleidiAI's SME
        int8/int4 matmuls, which rest on it, whenever the CPU reports SME (docs/android.md, ARM section).
        """
        worker = Path(__file__).resolve().with_name("litert_worker.py")
        done = subprocess.run([self.qemu, "-L", str(self.sysroot), "-cpu", cpu, str(self.python), "-s", str(worker),
                               "--smopa"], capture_output=True, text=True, env=self.env(), timeout=600)
        if done.returncode != 0 or done.stdout.strip() not in ("ok", "wrong", "absent"):
            raise EmulationUnavailable(f"the SMOPA probe does not run on {cpu}: {done.stderr.strip()[-400:]}",
                                       f"remove {self.sysroot.parent} and run again")
        return done.stdout.strip()

    def env(self) -> dict:
        """A clean environment: the host's PYTHONPATH/PYTHONHOME would point the guest at x86 packages."""
        return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(self.site),
                "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(self.sysroot.parent)}


def _cpuinfo(midr: int, features: list[str]) -> str:
    return (f"processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: {' '.join(features)}\n"
            f"CPU implementer\t: 0x{midr >> 24:02x}\nCPU architecture: 8\nCPU variant\t: 0x{(midr >> 20) & 0xF:x}\n"
            f"CPU part\t: 0x{(midr >> 4) & 0xFFF:03x}\nCPU revision\t: {midr & 0xF}\n\n")


def cache_root() -> Path:
    return cache_dir() / "aarch64"


def pinned_versions() -> dict:
    """numpy and ai-edge-litert as this machine's Python has them: both sides run the same releases."""
    try:
        return {name: metadata.version(name) for name in WHEELS}
    except metadata.PackageNotFoundError as exc:
        raise EmulationUnavailable(f"{exc.name} is not installed in this Python",
                                   "pip install -e '.[convert]' (it brings ai-edge-litert and numpy)") from None


def qemu(install: bool = True, log=print) -> str:
    """qemu-aarch64-static; installed from Debian's packages when missing and allowed (root, apt-get)."""
    found, failed = (debian_packages.ensure_command(QEMU, "qemu-user-static", log=log) if install
                     else (shutil.which(QEMU), ""))
    if found:
        return found
    if not failed:  # not installed, and not ours to install
        raise EmulationUnavailable(f"{QEMU} not found", "install it as root: apt-get install -y qemu-user-static")
    raise EmulationUnavailable(f"{QEMU} could not be installed ({failed})", "run as root: apt-get update && "
                               "apt-get install -y qemu-user-static")


def _need_debian_arm64(log) -> None:
    """apt must know arm64 packages: add the foreign architecture (root) and refresh the lists once."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise EmulationUnavailable("apt-get and dpkg-deb are needed to fetch Debian's arm64 Python",
                                   "run on a Debian or Ubuntu machine")
    foreign = subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True).stdout.split()
    if "arm64" in foreign and _apt_knows(f"{PYTHON}-minimal:arm64"):
        return
    if os.geteuid() != 0:
        raise EmulationUnavailable("apt does not list arm64 packages, and adding them needs root",
                                   "as root: dpkg --add-architecture arm64 && apt-get update")
    log("adding the arm64 architecture to apt (dpkg --add-architecture arm64; apt-get update)")
    subprocess.run(["dpkg", "--add-architecture", "arm64"], check=True, capture_output=True)
    done = debian_packages.apt_get("update", "-q")
    if done.returncode != 0 or not _apt_knows(f"{PYTHON}-minimal:arm64"):
        raise EmulationUnavailable(f"apt-get update did not bring {PYTHON}-minimal:arm64 "
                                   f"({done.stderr.strip()[-300:]})",
                                   "check the apt sources reach Debian's archive (arm64 is in the main archive)")


def _apt_knows(package: str) -> bool:
    return subprocess.run(["apt-cache", "show", package], capture_output=True).returncode == 0


def _arm64_closure() -> list[str]:
    """The arm64 packages the roots depend on (Depends/Pre-Depends, no recommends), roots included."""
    done = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                           "--no-breaks", "--no-replaces", "--no-enhances",
                           *[f"{p}:arm64" for p in ROOT_PACKAGES]], capture_output=True, text=True, check=True)
    names = {line.strip() for line in done.stdout.splitlines() if not line.startswith(" ")}
    # <virtual> names have real providers listed too; dpkg and install-info only run maintainer scripts
    return sorted(n for n in names if n.endswith(":arm64") and not n.startswith("<")
                  and n.split(":")[0] not in ("dpkg", "install-info", "debconf", "perl-base"))


def _sysroot(partial: Path, log) -> None:
    debs = partial / "debs"
    debs.mkdir(parents=True)
    packages = _arm64_closure()
    log(f"downloading {len(packages)} Debian arm64 packages (apt-get download)")
    done = subprocess.run(["apt-get", "download", "-q", *packages], cwd=debs, capture_output=True, text=True)
    if done.returncode != 0:
        raise EmulationUnavailable(f"apt-get download failed: {done.stderr.strip()[-400:]}",
                                   "check the machine reaches its apt sources, then run again")
    root = partial / "sysroot"
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, capture_output=True)
    shutil.rmtree(debs)
    # merged /usr: the dynamic loader is asked for as /lib/ld-linux-aarch64.so.1
    for link, target in (("lib", "usr/lib"), ("bin", "usr/bin")):
        if not (root / link).exists():
            (root / link).symlink_to(target)


def _wheels(partial: Path, versions: dict, log) -> None:
    log("downloading the aarch64 wheels: " + ", ".join(f"{n}=={v}" for n, v in versions.items()))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--only-binary=:all:", "--platform", "manylinux2014_aarch64", "--platform",
                           "manylinux_2_27_aarch64", "--platform", "manylinux_2_28_aarch64", "--python-version",
                           "3.11", "--implementation", "cp", "--abi", "cp311", "--target", str(partial / "site"),
                           *[f"{n}=={v}" for n, v in versions.items()]], capture_output=True, text=True)
    if done.returncode != 0:
        raise EmulationUnavailable(f"pip could not fetch the aarch64 wheels: {done.stderr.strip()[-400:]}",
                                   "check the machine reaches the package index, then run again")


def _smoke(environment: Environment) -> str:
    """The guest Python imports both wheels and says it is aarch64."""
    probe = ("import platform, numpy; from ai_edge_litert.interpreter import Interpreter as I; "
             "print(platform.machine(), numpy.__version__)")
    done = subprocess.run(environment.command("max", "-c", probe), capture_output=True, text=True,
                          env=environment.env(), timeout=600)
    if done.returncode != 0 or not done.stdout.startswith("aarch64"):
        raise EmulationUnavailable(f"the aarch64 Python does not start: {(done.stderr or done.stdout).strip()[-600:]}",
                                   f"remove {environment.sysroot.parent} and run again")
    return done.stdout.strip()


@contextlib.contextmanager
def _locked(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare(log=print, install: bool = True) -> Environment:
    """The cached aarch64 environment, made (a few minutes, once) when missing or for other versions."""
    if platform.machine() != "x86_64":
        raise EmulationUnavailable(f"the aarch64 environment is prepared on x86-64 hosts (this is "
                                   f"{platform.machine()})", "run on an x86-64 Debian or Ubuntu machine")
    emulator = qemu(install, log)
    versions = pinned_versions()
    root = cache_root()
    ready = root / "ready.json"
    want = {"format": FORMAT, "python": PYTHON, **versions}
    with _locked(root):
        current = root / "current"
        if ready.is_file() and json.loads(ready.read_text()).get("versions") == want and current.is_dir():
            return Environment(emulator, current / "sysroot", current / "site", versions)
        log(f"preparing the aarch64 environment in {root} (once; a few minutes)")
        _need_debian_arm64(log)
        partial = root / "current.partial"
        if partial.exists():  # an interrupted set-up: ours, start again
            shutil.rmtree(partial)
        ready.unlink(missing_ok=True)
        _sysroot(partial, log)
        _wheels(partial, versions, log)
        _smoke(Environment(emulator, partial / "sysroot", partial / "site", versions))
        if current.exists():
            shutil.rmtree(current)
        partial.rename(current)
        environment = Environment(emulator, current / "sysroot", current / "site", versions)
        log("aarch64 Python ready: " + _smoke(environment))
        ready.write_text(json.dumps({"versions": want}) + "\n")
        return environment
