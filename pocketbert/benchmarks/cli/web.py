"""``pocketbert-bench web-peers``: our web pipeline beside transformers.js and MediaPipe in one Chromium run."""

from __future__ import annotations

from pathlib import Path

import click

from .common import RESULTS, bundles_argument, data_dir_option, fail, ints, log, quiet_transformers, work_dir_for
from .group import cli


@cli.command("web-peers", help="Each BUNDLE in headless Chromium through our web pipeline (its TFLite files), "
             "transformers.js (its ONNX files as a local model folder) and MediaPipe's TextClassifier (its "
             "single-bucket classification TFLite files): bytes downloaded, cold load to first result, p50/p90 per length and "
             "thread count, agreement with the Python runtime on the dev set's first texts. Writes "
             "DIR/web-peers.json (web-peers-fast.json with --quick) and prints the table.")
@bundles_argument()
@click.option("--texts", type=click.IntRange(min=1), default=200, show_default=True,
              help="dev texts compared with the Python runtime")
@click.option("--runs", type=click.IntRange(min=1), default=30, show_default=True, help="timed calls per length")
@click.option("--warmup", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--threads", "threads_text", default="1,2", show_default=True,
              help="thread counts, where a runtime offers them")
@click.option("--seq-len", "seq_text", default="32,128", show_default=True, help="timed text lengths in tokens")
@click.option("--quick", is_flag=True, help="8 texts, 1 warm-up + 3 timed calls: checks the harness, not figures")
@click.option("--web-src", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              help="PocketBERT web sources to benchmark (default: the checkout's web/src)")
@data_dir_option()
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=RESULTS, show_default=True,
              help="results directory")
def web_peers(bundle_dirs, texts, runs, warmup, threads_text, seq_text, quick, web_src, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from .. import schema
    from .. import web_peers as job
    from .. import web_peers_report as render

    quiet_transformers()
    shape = {"threads": tuple(ints(threads_text, "--threads")), "seq_lens": tuple(ints(seq_text, "--seq-len")),
             "data_dir": data_dir, "web_src": web_src}
    settings = (job.PeerSettings.quick(**shape) if quick
                else job.PeerSettings(texts=texts, warmup=warmup, runs=runs, **shape))
    # results sent elsewhere with --out keep their work files out of the checkout too
    work = work_dir_for(None, None if Path(out) == RESULTS else out) / "web-peers"
    try:
        data = job.measure(list(bundle_dirs), settings, work, log=log)
    except job.WebPeersError as exc:
        fail(exc.problem, exc.fix)
    except ConverterError as exc:  # a dev file missing under the data directory
        fail(exc.problem, exc.fix or "pass --data-dir DIR holding glue/SST-2 and conll2003")
    path = schema.write(data, Path(out) / ("web-peers-fast.json" if quick else "web-peers.json"))
    click.echo("\n".join(render.table(data["results"])))
    click.echo(str(path))
