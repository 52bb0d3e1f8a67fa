"""The one command end to end beyond BERT × sentence classification: every registered family and every head (sentence
pairs, regression, token classification) planned, trained for a few steps, gated, converted and opened by the runtime.

Each combination is one tiny random checkpoint and a few rows of the task's own files given as a user's files; the
plan must hold a training lever and a lever that changes the shapes, and the steps must run in its order."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pocketbert import runtime
from pocketbert.converter.cli import main
from pocketbert.converter.families import families
from pocketbert.converter.levers import shapes

from .conftest import DATA, NER_LABELS, build_checkpoint

TRAINING = {"recover", "factor-embeddings", "shrink", "int4-tune"}
SHAPES = {"trim-vocab", "factor-embeddings", "narrow", "shrink"}


@dataclass(frozen=True)
class Combo:
    family: str
    head: str  # classification or ner
    labels: tuple[str, ...]
    data: str  # folder under the data directory
    files: tuple[str, str]  # training and dev file names
    rows: tuple[int, int]  # training and dev rows (sentences for CoNLL)
    max_size: float  # of the int4 file, as a fraction of the checkpoint's
    plan: tuple[str, ...] = ()  # the levers the planner must choose
    config: tuple = ()  # overrides of the family's tiny config

    @property
    def name(self) -> str:
        return f"{self.family}-{self.data.replace('/', '-').lower()}"


COMBOS = [
    Combo("distilbert", "classification", ("0", "1"), "glue/MRPC", ("train.tsv", "dev.tsv"), (48, 32), 0.6,
          ("recover", "trim-vocab", "shrink", "int4-tune", "pack")),  # fewer blocks reach it: no narrowing
    # MobileBERT has NoNorm and ReLU by construction: nothing to recover
    Combo("mobilebert", "classification", ("score",), "glue/STS-B", ("train.tsv", "dev.tsv"), (48, 32), 0.6,
          ("trim-vocab", "shrink", "int4-tune", "pack")),
    # TinyBERT's shapes (4 blocks, 12 heads, a feed-forward block ~3.85× the width), tiny
    Combo("bert", "ner", tuple(NER_LABELS), "conll2003", ("train.txt", "dev.txt"), (48, 32), 0.8,
          ("recover", "factor-embeddings", "narrow", "shrink", "int4-tune", "pack"),
          (("hidden_size", 48), ("num_hidden_layers", 4), ("num_attention_heads", 12), ("intermediate_size", 184))),
]


def _cut(source: Path, target: Path, rows: int) -> None:
    """The first ``rows`` rows of a TSV (after its header), or the first ``rows`` sentences of a CoNLL file."""
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".tsv":
        kept = text.splitlines()[: rows + 1]
    else:
        sentences = [s for s in text.split("\n\n") if s.strip() and not s.startswith("-DOCSTART-")]
        kept = "\n\n".join(sentences[:rows]).splitlines()
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")


@dataclass
class Run:
    combo: Combo
    root: Path
    code: int
    out: str
    max_bytes: int

    @property
    def work(self) -> Path:
        return self.root / "bundle.levers"

    def steps(self) -> list[dict]:
        return list(json.loads((self.work / "steps.json").read_text(encoding="utf-8")).values())


@pytest.fixture(scope="module", params=COMBOS, ids=lambda c: c.name)
def run(request, tmp_path_factory, tokenizer) -> Run:
    """The one command on one combination, as a user runs it: a target of ``max_size`` of the teacher's int4 file and
    60% of its multiply-adds, a budget of 4 steps, a gate that passes (the test is about running every lever)."""
    combo = request.param
    root = tmp_path_factory.mktemp(combo.name)
    for name, rows in zip(combo.files, combo.rows):
        _cut(DATA / combo.data / name, root / name, rows)
    teacher = build_checkpoint(root / "teacher", combo.family, tokenizer, head=combo.head, labels=combo.labels,
                               **dict(combo.config))
    max_bytes = int(combo.max_size * shapes.file_bytes(shapes.read(teacher), (32,)))
    args = [str(teacher), "--opt", "nonorm,relu,fold", "--format", "tflite", "--max-size", str(max_bytes),
            "--max-macs", "0.6", "--recover", str(root / combo.files[0]), "--dev", str(root / combo.files[1]),
            "--budget", "4steps", "--max-accuracy-drop", "100", "--buckets", "32", "--no-latency",
            "--verify-samples", "16", "--calibration-samples", "16", "--threads", "1", "-o", str(root / "bundle")]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(args)
    return Run(combo, root, code, printed.getvalue(), max_bytes)


def test_every_family_and_head_is_covered():
    assert {c.family for c in COMBOS} == {f.name for f in families()}
    heads = {("pairs" if c.data == "glue/MRPC" else "regression" if len(c.labels) == 1 else c.head) for c in COMBOS}
    assert heads == {"pairs", "regression", "ner"}  # BERT × sentence classification: tests/test_one_command.py


def test_the_plan_is_printed_first_and_run_in_its_order(run):
    assert run.code == 0, run.out[-3000:]
    plan = run.out[run.out.index("plan from the shapes"):run.out.index("dev score to keep")]
    planned = re.findall(r"^  \d\. (\S+)", plan, re.MULTILINE)
    assert planned == list(run.combo.plan)
    assert set(planned) & TRAINING and set(planned) & SHAPES and planned[-2:] == ["int4-tune", "pack"]
    first = run.out.index(f"step 1 of {len(planned)}: {planned[0]}")
    assert run.out.index("plan from the shapes") < run.out.index("dev score to keep") < first
    assert re.findall(r"^step \d of \d: (\S+)", run.out, re.MULTILINE) == planned
    assert [step["lever"] for step in run.steps()] == planned
    assert all((run.work / step["out"] / "config.json").is_file() for step in run.steps())
    gate = re.search(r"^dev \S+ (-?[\d.]+) meets the gate", run.out, re.MULTILINE)
    assert gate and float(gate.group(1)) == pytest.approx(run.steps()[-1]["score"], abs=0.005)


def test_each_step_makes_the_shapes_it_planned(run):
    """The size and multiply-adds the plan printed for a step are those of the checkpoint the step wrote."""
    printed = re.findall(r"^  \d\. .*?([\d.]+) MB +([\d,]+) M MACs", run.out, re.MULTILINE)
    assert len(printed) == len(run.steps())
    for (megabytes, macs), step in zip(printed, run.steps()):
        made = shapes.read(run.work / step["out"])
        assert (f"{shapes.file_bytes(made, (32,)) / 1e6:.2f}", f"{shapes.macs(made) / 1e6:,.0f}") == (megabytes, macs)
    assert float(printed[-1][0]) * 1e6 <= run.max_bytes


def test_every_step_scores_on_the_dev_file(run):
    """Each lever's own record is scored on the dev file the command was given, not on the training file: the
    score it records is the one the command printed after it."""
    metric = "f1" if run.combo.head == "ner" else "pearson" if len(run.combo.labels) == 1 else "accuracy"
    for step in run.steps():
        record = json.loads((run.work / step["out"] / "training.json").read_text(encoding="utf-8"))
        scores = record["dev_scores"]
        recorded = next((scores[key][metric] for key in ("shipped", "recovered") if key in scores), scores.get(metric))
        assert record["dev_examples"] == run.combo.rows[1], step["lever"]
        assert recorded == pytest.approx(step["score"], abs=0.01), step["lever"]


def test_the_bundle_fits_verifies_and_runs(run):
    assert run.code == 0, run.out[-3000:]
    bundle = run.root / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["family"] == run.combo.family and manifest["labels"] == list(run.combo.labels)
    assert {"nonorm", "relu", "fold"} <= {t["name"] for t in manifest["transforms"]}
    shipped = [a for a in manifest["artifacts"] if a["recipe"] != "tflite:fp32"]
    assert shipped and all((bundle / a["file"]).stat().st_size <= run.max_bytes for a in shipped)
    pipeline = runtime.load(bundle)  # verifies every file's SHA-256 against the manifest
    if run.combo.head == "ner":
        entities = pipeline("EU rejects German call to boycott British lamb .")
        assert entities and all(e["entity_group"] in {"PER", "ORG", "LOC", "MISC"} for e in entities)
    else:
        (row,) = pipeline([("A man is dancing .", "A man dances .")])
        assert row["label"] in run.combo.labels and math.isfinite(row["score"])
        assert manifest["problem_type"] == ("regression" if len(run.combo.labels) == 1 else
                                           "single_label_classification")
