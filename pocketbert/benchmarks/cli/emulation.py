"""Results on CPUs this machine is not, under QEMU: ``cpus`` (x86 models), ``arm64`` (LiteRT's aarch64 build); and
under valgrind, ``avx2-instructions``: what an AVX2-only CPU's kernels execute."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from pocketbert.runtime.errors import Error

from .. import arm64, avx2_instructions, emulated_cpus
from .common import RESULTS, bundles_argument, cpu_names, data_dir_option, fail, log, results_file_option
from .group import cli


@cli.command(help="Every verified artifact of each BUNDLE on emulated x86 CPUs (QEMU user mode: Haswell = AVX2 "
             "without VNNI, SandyBridge = no AVX2), compared with this machine's run. Results, never timings. "
             "Exit code 1 when an artifact differs beyond its tolerance.")
@bundles_argument()
@click.option("--cpus", default=",".join(emulated_cpus.CPUS), show_default=True, help="comma-separated CPU models")
@click.option("--samples", type=click.IntRange(min=1), default=50, show_default=True,
              help="verification sentences of the bundle's task (data directory), else built-in English text")
@data_dir_option()
def cpus(bundle_dirs, cpus, samples, data_dir):
    from pocketbert.converter.errors import ConverterError

    names = cpu_names(cpus, emulated_cpus.CPUS, "CPU")
    try:
        emulated_cpus.qemu()
    except emulated_cpus.EmulationUnavailable as exc:
        fail(exc.problem, exc.fix)
    failed = False
    for bundle in bundle_dirs:
        try:
            texts = emulated_cpus.bundle_texts(bundle, samples, data_dir)
            log(f"{bundle}: {len(texts)} sentences on {', '.join(names)} (emulated) and this CPU")
            rows = emulated_cpus.check(bundle, texts, names)
        except (Error, ConverterError) as exc:  # a missing or broken bundle, a missing --data-dir
            fail(getattr(exc, "problem", str(exc)), getattr(exc, "fix", None) or "pass a bundle directory "
                 "written by pocketbert-convert")
        click.echo(emulated_cpus.table(rows))
        failed |= not all(r["passed"] for r in rows)
    sys.exit(1 if failed else 0)


@cli.command("arm64", help="Every verified TFLite artifact of each BUNDLE, at every bucket, on LiteRT's aarch64 "
             "build (the ARM kernels phones run) under QEMU user-mode emulation, compared with this machine's "
             "LiteRT. Prepares the aarch64 Python once, cached outside the repository. Results, never timings. "
             "Exit code 1 when an artifact differs beyond its tolerance.")
@bundles_argument()
@click.option("--cpus", default=",".join(arm64.DEFAULT_CPUS), show_default=True,
              help=f"comma-separated QEMU ARM CPU models ({', '.join(arm64.CPUS)})")
@click.option("--samples", type=click.IntRange(min=1), default=24, show_default=True,
              help="verification sentences of the bundle's task, each run at every bucket")
@click.option("--recipes", default=None, help="comma-separated TFLite recipes to check (default: every verified one)")
@data_dir_option()
@results_file_option(default=RESULTS / "arm64.json", help="results file")
def arm64_(bundle_dirs, cpus, samples, recipes, data_dir, out):
    from pocketbert.converter.errors import ConverterError
    from pocketbert.runtime import machine

    from .. import aarch64_env, schema

    names = cpu_names(cpus, arm64.CPUS, "ARM CPU")
    try:
        environment = aarch64_env.prepare(log=log)
    except aarch64_env.EmulationUnavailable as exc:
        fail(exc.problem, exc.fix)
    device = {"kind": arm64.DEVICE_KIND, "emulator": _qemu_version(environment.qemu),
              "python": aarch64_env.PYTHON + " (Debian arm64)", "versions": environment.versions}
    data = schema.new_file("arm64", fast=False, machine=machine.describe(), device=device,
                           settings={"cpus": names, "samples": samples, "recipes": recipes or "all"})
    for bundle in bundle_dirs:
        try:
            texts = emulated_cpus.bundle_texts(bundle, samples, data_dir)
            data["results"] += arm64.check(bundle, texts, names, environment, log=log,
                                           recipes=[r.strip() for r in recipes.split(",")] if recipes else None)
        except (Error, ConverterError) as exc:  # a missing or broken bundle, a missing --data-dir
            fail(getattr(exc, "problem", str(exc)), getattr(exc, "fix", None) or "pass a bundle directory "
                 "written by pocketbert-convert")
    click.echo(arm64.table(data["results"]))
    schema.write(data, out)
    click.echo(str(out))
    sys.exit(0 if all(r["passed"] for r in data["results"]) else 1)


def _qemu_version(qemu: str) -> str:
    done = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    return (done.stdout.splitlines() or ["qemu-aarch64 (version unknown)"])[0]


@cli.command("avx2-instructions", help="Instructions per inference of every verified ONNX and TFLite artifact of each "
             "BUNDLE on the kernels an AVX2-only CPU runs (no AVX-512, no VNNI), counted under valgrind on any x86-64 "
             "machine: 1 thread, batch 1, --seq-len tokens; and how many fewer than the bundle's fp32 file of the same "
             "format. Counts, not seconds: minutes per artifact (valgrind emulates every instruction).")
@bundles_argument()
@click.option("--seq-len", type=click.IntRange(min=2), default=128, show_default=True,
              help="tokens per inference (a TFLite file needs a signature of that length)")
@click.option("--recipes", default=None, help="comma-separated recipes to count (default: every verified one)")
@results_file_option(help="results file (JSON); none unless given")
def avx2_instructions_(bundle_dirs, seq_len, recipes, out):
    import tempfile

    from pocketbert.runtime import machine

    from .. import schema

    wanted = [r.strip() for r in recipes.split(",") if r.strip()] if recipes else None
    try:
        if wanted:
            avx2_instructions.check_recipes(bundle_dirs, wanted)
        version = avx2_instructions.valgrind_version()
        data = schema.new_file("avx2-instructions", fast=False, machine=machine.describe(),
                               device={"kind": "valgrind (callgrind), AVX2 without AVX-512", "emulator": version},
                               settings={"seq_len": seq_len, "threads": 1, "batch": 1, "recipes": recipes or "all"})
        with tempfile.TemporaryDirectory(prefix="pocketbert-avx2-inputs-") as inputs:
            for bundle in bundle_dirs:
                data["results"] += avx2_instructions.count_bundle(
                    bundle, seq_len, Path(inputs), recipes=wanted, log=log)
    except avx2_instructions.InstructionCountUnavailable as exc:
        fail(exc.problem, exc.fix)
    except Error as exc:  # a missing or broken bundle
        fail(exc.problem, exc.fix or "pass a bundle directory written by pocketbert-convert")
    click.echo(avx2_instructions.table(data["results"]))
    if out is not None:
        schema.write(data, out)
        click.echo(str(out))
