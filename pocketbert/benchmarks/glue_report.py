"""REPORT.md's GLUE and CoNLL-2003 section, from ``pocketbert-bench glue`` results files (and the command's
own summary of a run, :func:`summary`).

One GLUE table (SST-2, MRPC, CoLA, STS-B dev): the teacher, nonorm,relu without recovery and recovered
(PyTorch), then every artifact as the runtime runs it, each with its delta to the teacher of its task, and
the GLUE average of the four beside the MobileBERT paper's -0.8 for the same optimisations.  CoNLL-2003
gets dev and test rows.  Each artifact is held to the gates of :mod:`benchmarks.gates`; misses are listed.
"""

from __future__ import annotations

from .accuracy import GLUE_TASKS
from .gates import INT8_EXTRA, MAX_DROP
from .glue_options import RECIPES

PAPER_GLUE_DELTA = -0.8  # MobileBERT (Sun et al., 2020), Table 5: GLUE 78.5 without the OPT changes, 77.7 with
SHORT = {"glue:sst2": "SST-2 acc", "glue:mrpc": "MRPC F1", "glue:cola": "CoLA MCC", "glue:stsb": "STS-B Pearson"}
STAGES = [("teacher", "teacher (fine-tuned, PyTorch fp32)"),
          ("without_recovery", "nonorm,relu without recovery (PyTorch)"),
          ("recovered", "nonorm,relu recovered (PyTorch)")]


def records(files: list[dict]) -> list[dict]:
    """Every glue record, a later file's row replacing an earlier one's (same task, split, stage, runner)."""
    rows: dict[tuple, dict] = {}
    for f in sorted((f for f in files if f["command"] == "glue"), key=lambda f: f["created"]):
        for r in f["results"]:
            rows[(r["task"], r["split"], r["stage"], r["runner"])] = {**r, "_fast": f.get("fast")}
    return list(rows.values())


def _lines_of(rows: list[dict], split: str, tasks) -> list[tuple[str, dict]]:
    """(row label, {task: record}) in table order: PyTorch stages, the teacher's exports, the artifacts."""
    table: dict[str, dict] = {}
    for stage, label in STAGES:
        table[label] = {r["task"]: r for r in rows if r["stage"] == stage and r["split"] == split}
    for stage, runner in [(s, r) for s in ("teacher-artifact", "artifact") for r in RECIPES]:
        label = f"teacher {runner} (runtime)" if stage == "teacher-artifact" else f"{runner} +nonorm,relu,fold"
        table[label] = {r["task"]: r for r in rows if r["stage"] == stage and r["runner"] == runner
                        and r["split"] == split and r["task"] in tasks}
    return [(label, by_task) for label, by_task in table.items() if by_task]


def _cell(r: dict | None, teacher: dict | None) -> str:
    if r is None:
        return "-"
    if r.get("refused"):
        return "refused"
    delta = r["score"] - teacher["score"] if teacher else None
    mark = "" if (r.get("gate") or {}).get("passed", True) else " ✗"
    return f"{r['score']:.2f} ({delta:+.2f}){mark}" if delta is not None else f"{r['score']:.2f}"


def glue_table(rows: list[dict]) -> list[str]:
    tasks = [t for t in GLUE_TASKS if any(r["task"] == t for r in rows)]
    if not tasks:
        return []
    teachers = {r["task"]: r for r in rows if r["stage"] == "teacher" and r["split"] == "dev"}
    lines = ["| model (dev split) | " + " | ".join(SHORT[t] for t in tasks) + " | GLUE average (Δ) |",
             "|---|" + "---|" * (len(tasks) + 1)]
    for label, by_task in _lines_of(rows, "dev", tasks):
        cells = [_cell(by_task.get(t), teachers.get(t)) for t in tasks]
        scored = [by_task[t] for t in tasks if t in by_task and by_task[t].get("score") is not None]
        average = "-"
        if len(scored) == len(tasks) == len(GLUE_TASKS) and all(t in teachers for t in tasks):
            mean = sum(r["score"] for r in scored) / len(scored)
            base = sum(teachers[t]["score"] for t in tasks) / len(tasks)
            average = f"{mean:.2f} (**{mean - base:+.2f}**)"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {average} |")
    lines.append("| MobileBERT paper: OPT (NoNorm, ReLU) vs without, GLUE (Pixel 4 model) | " + " | ".join(
        "" for _ in tasks) + f" | 77.7 vs 78.5 (**{PAPER_GLUE_DELTA:+.1f}**) |")
    return lines


def conll_table(rows: list[dict]) -> list[str]:
    ner = [r for r in rows if r["task"] == "conll2003"]
    splits = [s for s in ("dev", "test") if any(r["split"] == s for r in ner)]
    if not splits:
        return []
    teachers = {r["split"]: r for r in ner if r["stage"] == "teacher"}
    lines = ["| model (CoNLL-2003 entity F1) | " + " | ".join(splits) + " |", "|---|" + "---|" * len(splits)]
    per_split = {s: dict(_lines_of(ner, s, ["conll2003"])) for s in splits}
    for label in dict.fromkeys(label for s in splits for label in per_split[s]):
        cells = [_cell(per_split[s].get(label, {}).get("conll2003"), teachers.get(s)) for s in splits]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def gate_lines(rows: list[dict]) -> list[str]:
    arts = [r for r in rows if r["stage"] == "artifact" and r["split"] == "dev"]
    judged = [r for r in arts if r.get("gate")]
    misses = [r for r in judged if not r["gate"]["passed"]]
    refused = [r for r in arts if r.get("refused")]
    lines = [f"Gates on dev (float artifacts ≤ {MAX_DROP:g} point below the teacher, int8 ≤ {INT8_EXTRA:g} below "
             f"the float export of the same backend): **{len(judged) - len(misses)} of {len(judged)} pass**."]
    lines += [f"- ✗ {r['task']} {r['runner']}: {r['score']:.2f}, {r['delta_vs_teacher']:+.2f} vs teacher"
              + (f", {r['delta_vs_float']:+.2f} vs float" if "delta_vs_float" in r else "") + f" ({r['gate']['rule']})"
              for r in misses]
    lines += [f"- {r['task']} {r['runner']}: refused by the converter ({r['refused']})" for r in refused]
    recovered = {r["task"] for r in rows if r["stage"] == "recovered"}
    for task in sorted({r["task"] for r in rows} - {r["task"] for r in arts}):
        lines.append(f"- {task}: the run stopped before its artifacts were converted and scored (PyTorch rows only)"
                     if task in recovered else f"- {task}: the run stopped during recovery (the teacher's row only)")
    return lines


def budget_lines(files: list[dict], rows: list[dict]) -> list[str]:
    lines = []
    for f in (f for f in files if f["command"] == "glue"):
        s, m = f.get("settings") or {}, f.get("machine") or {}
        lines.append(f"- `{f['_path'].rsplit('/', 1)[-1]}` ({f['created']}{', FAST MODE' if f.get('fast') else ''}): "
                     f"`pocketbert-bench glue --tasks {','.join(s.get('tasks', []))} --finetune-budget "
                     f"{s.get('finetune_budget')} --recover-budget {s.get('recover_budget')} --calibration-samples "
                     f"{s.get('calibration_samples')} --verify-samples {s.get('verify_samples')} --threads "
                     f"{s.get('threads')}`; base {s.get('base')}; CPU {m.get('cpu')}; this invocation's wall time "
                     f"{(f.get('wall_seconds') or 0) / 60:.0f} min")
    done = {}
    for r in rows:
        if r.get("training"):
            done[r["task"]] = r["training"]
    for task, t in done.items():
        recovery = (f"recovery {t['recover']['steps']} steps in {t['recover']['seconds'] / 60:.1f} min"
                    if "recover" in t else "recovery not finished")
        lines.append(f"- {task}: teacher {t['finetune']['steps']} steps in {t['finetune']['seconds'] / 60:.1f} min "
                     f"({t['finetune']['train_examples']} training examples), {recovery}")
    return lines


def section(files: list[dict], plots: dict) -> list[str]:
    rows = records(files)
    if not rows:
        return []
    lines = ["## GLUE and CoNLL-2003: every artifact against its teacher", "",
             "`pocketbert-bench glue`: per task, the teacher fine-tuned from the base, nonorm,relu applied and "
             "recovered by distillation, converted with every recipe, every artifact scored by the runtime on the "
             "full dev split (CoNLL-2003: dev and test). Δ: points against the task's teacher (PyTorch fp32); ✗: "
             "the artifact misses its gate.", ""]
    if any(r.get("_fast") for r in rows):
        lines += ["> **Fast mode rows present (tiny random model): they test the harness, they are not figures.**",
                  ""]
    lines += glue_table(rows) + [""] + conll_table(rows) + [""] + gate_lines(rows) + [""]
    lines += ["Budgets and runs:", ""] + budget_lines(files, rows) + [""]
    return lines


def plot_points(files: list[dict]) -> list[tuple[str, float, float]]:
    """(label, speed-up over the teacher's fp32 TFLite export, Δ vs teacher) per recovered artifact: the GLUE
    average over the four tasks (when all four have it) and CoNLL-2003 dev."""
    rows = [r for r in records(files) if r["stage"] == "artifact" and r["split"] == "dev" and r.get("score") is not None
            and r.get("speedup_vs_teacher_tflite_fp32")]
    points = []
    for runner in RECIPES:
        glue = [r for r in rows if r["runner"] == runner and r["task"] in GLUE_TASKS]
        if len({r["task"] for r in glue}) == len(GLUE_TASKS):
            points.append((f"GLUE avg · {runner} +nonorm,relu,fold", _mean(glue, "speedup_vs_teacher_tflite_fp32"),
                           _mean(glue, "delta_vs_teacher")))
        points += [(f"CoNLL-2003 · {runner} +nonorm,relu,fold", r["speedup_vs_teacher_tflite_fp32"],
                    r["delta_vs_teacher"]) for r in rows if r["runner"] == runner and r["task"] == "conll2003"]
    return points


def _mean(rows: list[dict], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def summary(data: dict) -> str:
    """One line per task and split: teacher, recovered, and each artifact's Δ and gate."""
    lines = []
    keyed: dict[tuple, list[dict]] = {}
    for r in data["results"]:
        keyed.setdefault((r["task"], r["split"]), []).append(r)
    for (task, split), rows in keyed.items():
        by_stage = {r["stage"]: r for r in rows if r["runner"] == "pytorch:fp32"}
        head = ", ".join(f"{s} {by_stage[s]['score']:.2f}" for s in ("teacher", "without_recovery", "recovered")
                         if s in by_stage)
        lines.append(f"{task} {split} ({rows[0]['metric']}): {head}")
        for r in rows:
            if r["stage"] != "artifact":
                continue
            if r.get("refused"):
                lines.append(f"  {r['runner']}: refused by the converter ({r['refused']})")
                continue
            gate = r.get("gate") or {}
            lines.append(f"  {r['runner']}: {r['score']:.2f} ({r['delta_vs_teacher']:+.2f} vs teacher) "
                         f"{'pass' if gate.get('passed') else 'FAIL'}: {gate.get('rule', '')}")
    lines.append(f"wall time {data.get('wall_seconds', 0) / 60:.1f} min")
    return "\n".join(lines)
