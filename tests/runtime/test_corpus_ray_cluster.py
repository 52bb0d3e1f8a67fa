"""The multi-machine path, exercised: a two-node Ray cluster on loopback (``ray start --head`` and a second
``ray start --address``, each its own raylet and object store, started and stopped here) runs
``python -m runtime … --ray ADDRESS --workers 2`` and gives the same file as the streaming job.

The head offers 1 CPU and each actor takes 1: the second actor can only be placed on the second node, so
the job finishes only if both nodes take part."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pocketbert.converter.inputs.texts import read_texts

from ..conftest import DATA

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[cluster]' (the test extra has it)")

RAY = str(Path(sys.executable).with_name("ray"))
STORE = str(80 * 1024 * 1024)  # bytes of object store per node: small, the corpus is small


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env() -> dict:
    """A throw-away cluster on loopback: no token authentication (Ray's default for `ray start`), so the driver
    and `ray status` connect without a token file."""
    return {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, "RAY_AUTH_MODE": "disabled"}


def ray_command(*args) -> subprocess.Popen:
    """``ray start … --block`` in a process group of its own: its raylet, object store and workers are the
    group's, so the teardown ends exactly them (``ray stop`` would end every Ray on the machine)."""
    return subprocess.Popen([RAY, "start", "--block", "--node-ip-address", "127.0.0.1", "--object-store-memory",
                             STORE, "--dashboard-agent-listen-port", str(free_port()), *args], env=ray_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop(nodes: list[subprocess.Popen]) -> None:
    """SIGTERM (Ray starts draining the node), then SIGKILL to whatever of each node's group is left after 5 s."""
    for node in nodes:
        node.terminate()
    deadline = time.monotonic() + 5
    for node in nodes:
        try:
            node.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.wait()


def nodes_alive(address: str) -> int:
    done = subprocess.run([RAY, "status", "--address", address], capture_output=True, text=True, env=ray_env())
    return done.stdout.count(" node_") if done.returncode == 0 else 0


@pytest.fixture(scope="module")
def cluster():
    address = f"127.0.0.1:{free_port()}"
    head = ray_command("--head", "--port", address.rsplit(":", 1)[1], "--num-cpus", "1", "--include-dashboard",
                       "false")
    second = None
    try:
        deadline = time.monotonic() + 90
        while nodes_alive(address) < 1:
            assert head.poll() is None and time.monotonic() < deadline, "the head node did not start"
            time.sleep(1)
        second = ray_command("--address", address, "--num-cpus", "2")
        while nodes_alive(address) < 2:
            assert second.poll() is None and time.monotonic() < deadline, "the second node did not join"
            time.sleep(1)
        yield address
    finally:
        stop([node for node in (second, head) if node is not None])


def test_two_node_cluster_gives_the_streaming_output(cluster, cls_bundle, tmp_path):
    texts = read_texts(DATA / "glue" / "SST-2" / "dev.tsv")
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    base = [sys.executable, "-m", "pocketbert.runtime", str(cls_bundle), "--input", str(source), "--threads", "1",
            "--chunk-rows", "100"]
    streamed = subprocess.run(base + ["--output", str(tmp_path / "stream.jsonl")], capture_output=True, text=True)
    assert streamed.returncode == 0, streamed.stderr
    on_cluster = subprocess.run(base + ["--output", str(tmp_path / "cluster.jsonl"), "--ray", cluster, "--workers",
                                        "2"], capture_output=True, text=True, timeout=300, env=ray_env())
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert (tmp_path / "cluster.jsonl").read_bytes() == (tmp_path / "stream.jsonl").read_bytes()
    assert len((tmp_path / "cluster.jsonl").read_text().splitlines()) == len(texts)
