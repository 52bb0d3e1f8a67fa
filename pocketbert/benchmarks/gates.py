"""Accuracy gates of recovered models: the bundle's artifacts scored against its teacher.

    pocketbert-bench gates BUNDLE… [--limit N]

For a bundle made from a recovered checkpoint (``pocketbert-convert recover``; its training record
travels in the manifest as ``source.training``) or converted with ``--recover`` (``recovery``), every
artifact is scored on the task's dev split, as the runtime runs it (:mod:`benchmarks.accuracy`), and
held to the gates:

* float artifacts (fp32, fp16): at most ``--max-drop`` (1.0) points below the teacher, the
  untransformed fine-tuned model scored in PyTorch;
* int8 artifacts: at most ``--int8-extra`` (0.5) further points below the bundle's own float export;
  in a bundle cut down to one target (no float artifact), at most ``--max-drop`` below the teacher;
* int4 artifacts, the phone-sized files: at most ``--max-drop`` below the teacher, the bar their size is
  bought against (their distance to the float export is reported too).

Exit code 1 when a gate fails, so CI or a release script can rely on it.
"""

from __future__ import annotations

from pathlib import Path

from pocketbert.converter.checks import dev_gate

from . import dev_file
from .accuracy import AccuracyError, evaluate

MAX_DROP = 1.0
INT8_EXTRA = dev_gate.INT8_EXTRA  # the converter holds int8 files to the same gate


#: what a lever (pocketbert-convert trim-vocab, factor-embeddings, narrow, int4-tune and pack) adds to the training
#: record it carries on from its input: a record with one describes a model changed after any recovery in it
LEVER_SECTIONS = ("vocab_trim", "factored_embeddings", "narrow", "int4_grid")


def recovery_record(manifest: dict) -> dict | None:
    """The record holding teacher scores: ``recovery`` (convert --recover) or the checkpoint's training."""
    for record in (manifest.get("recovery"), (manifest.get("source") or {}).get("training")):
        if record and "teacher" in (record.get("dev_scores") or {}):
            return record
    return None


def without_recovery(manifest: dict, record: dict, metric: str) -> float | None:
    """The teacher with nonorm/relu and no recovery, when ``record`` is the recovery of the model the bundle ships:
    ``convert --recover``'s own, or a checkpoint ``recover`` wrote that nothing changed since.  A lever's record
    (or shrink's) carries an earlier recovery's figure, which says nothing of the model it describes."""
    scores = (record.get("dev_scores") or {}).get("without_recovery") or {}
    if metric not in scores:
        return None
    if record is not manifest.get("recovery") and (
            record.get("kind") != "recover" or any(record.get(section) for section in LEVER_SECTIONS)):
        return None
    return scores[metric]


def dev_data(record: dict, dev: str | Path | None = None, bundle: str | Path | None = None) -> str:
    """What to score as the dev split: a short name's dev file under the data directory, or for a task given
    as a file, ``dev`` or the dev file the record names (relative to ``bundle``).  Never the training file."""
    from pocketbert.converter.data.tasks import TASKS

    task = record["task"]
    if dev is None and task.lower() in TASKS:
        return task
    recorded = record.get("dev_file")
    train = dev_file.recorded_path(record.get("train_file") or task, bundle)
    if not dev and not recorded:
        raise AccuracyError(f"the bundle's task is the file {task!r}, and it records no dev file (made before dev "
                            "files were recorded): scoring the training file would not be a dev score",
                            "pass the task's dev file: pocketbert-bench gates BUNDLE --dev DEV_FILE")
    given, dev = bool(dev), Path(dev) if dev else dev_file.recorded_path(recorded, bundle)
    if dev.resolve() == train.resolve():
        raise AccuracyError(f"the dev file {str(dev)!r} is the training file: its scores would not be dev scores",
                            "give the task's own dev file (--dev), held out from training")
    if not dev.is_file():
        whose = "given with --dev" if given else "the bundle records" + (
            "" if Path(recorded).is_absolute() else f" ({recorded!r}, read from the bundle folder)")
        raise AccuracyError(f"the dev file {str(dev)!r} {whose} is not here",
                            "pass where it is now: pocketbert-bench gates BUNDLE --dev DEV_FILE")
    return str(dev)


def check(bundle: Path, *, limit: int | None = None, max_drop: float = MAX_DROP, int8_extra: float = INT8_EXTRA,
          data_dir: str | None = None, dev: str | Path | None = None, threads: int | None = None,
          progress=print, rescore: bool = False) -> list[dict]:
    """``rescore``: run every artifact, even where the converter recorded its score on the same dev file (the
    same computation: ``converter.checks.dev_gate``)."""
    from pocketbert.runtime import Bundle
    from pocketbert.runtime.errors import BundleError

    try:  # a missing or broken bundle is the runtime's clear BundleError, not a JSON traceback
        manifest = Bundle.open(bundle).manifest
    except BundleError as exc:
        raise AccuracyError(exc.problem, exc.fix) from exc
    record = recovery_record(manifest)
    if record is None:
        raise AccuracyError(f"{bundle} records no teacher scores (not made from a recovered checkpoint)",
                            "convert a checkpoint written by `pocketbert-convert recover`, or use --recover")
    task, metric = record["task"], record["metric"]
    teacher = record["dev_scores"]["teacher"][metric]
    before_recovery = without_recovery(manifest, record, metric)
    scored = dev_data(record, dev, bundle)
    if dev is not None:  # a user's file: it must be this task's, or its score means nothing
        dev_file.check(dev, record, labels=list(manifest.get("labels") or []),
                       regression=manifest.get("problem_type") == "regression", data_dir=data_dir, bundle=bundle)
    recorded = None if rescore or limit else recorded_scores(manifest, scored, data_dir)
    data = evaluate([Path(bundle)], scored, "dev", limit, data_dir=data_dir, threads=threads, progress=progress,
                    recorded=recorded)
    rows = data["results"]
    floats = [r["score"] for r in rows if r["runner"].split(":")[1] in ("fp32", "fp16")]
    reference = max(floats) if floats else None
    out = []
    for r in rows:
        precision = r["runner"].split(":")[1]
        row = {"bundle": str(bundle), "task": task, "metric": metric, "runner": r["runner"], "score": r["score"],
               "teacher": teacher, "delta_vs_teacher": r["score"] - teacher, "examples": r["examples"],
               "dev_data": f"{task} dev" if scored == task else scored}
        if before_recovery is not None:
            row["without_recovery"] = before_recovery
        if reference is not None and precision.startswith(("int8", "int4")):
            row["delta_vs_float"] = r["score"] - reference
        if precision.startswith("int8") and reference is not None:
            row.update(gate=f"≤ {int8_extra:g} below the bundle's float export ({reference:.2f})",
                       passed=dev_gate.within(r["score"], reference, int8_extra))
        else:
            row.update(gate=f"≤ {max_drop:g} below the teacher", passed=dev_gate.within(r["score"], teacher, max_drop))
        out.append(row)
    return out


def recorded_scores(manifest: dict, scored: str, data_dir: str | None) -> dict[str, dict]:
    """Each artifact's dev score as the converter recorded it (``details.dev_score``), where it scored the very
    file the gates score now (its SHA-256); the example count and length are checked as the split is encoded."""
    from pocketbert.converter.data.tasks import resolve_task
    from pocketbert.converter.errors import ConverterInputError
    from pocketbert.runtime.contract import sha256

    try:
        digest = sha256(resolve_task(scored, "dev", data_dir)[1])
    except (ConverterInputError, OSError):
        return {}
    scores = {a["recipe"]: (a.get("details") or {}).get("dev_score") or {} for a in manifest.get("artifacts") or []}
    return {recipe: score for recipe, score in scores.items() if score.get("sha256") == digest}


def table(rows: list[dict]) -> str:
    """The gates as a Markdown table; "without recovery" only when some bundle's record is a recovery's own."""
    recovery = any("without_recovery" in r for r in rows)
    lines = ["| bundle | task | scored on | artifact | dev score | teacher | Δ vs teacher | "
             + ("without recovery | " if recovery else "") + "gate | result |",
             "|---|---|---|---|---|---|---|" + ("---|" if recovery else "") + "---|---|"]
    for r in rows:
        before = (f"{r['without_recovery']:.2f} | " if "without_recovery" in r else "— | ") if recovery else ""
        lines.append(f"| {Path(r['bundle']).name} | {r['task']} ({r['metric']}) | {r['dev_data']} | {r['runner']} | "
                     f"{r['score']:.2f} | {r['teacher']:.2f} | {r['delta_vs_teacher']:+.2f} | {before}{r['gate']} | "
                     f"{'pass' if r['passed'] else '**FAIL**'} |")
    return "\n".join(lines)
