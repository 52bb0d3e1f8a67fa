"""REPORT.md's accuracy section: every artifact's task score and its delta against the model's original."""

from __future__ import annotations

from .report_common import fmt, row_name


def section(accuracy: list[dict], plots: dict) -> list[str]:
    if not accuracy:
        lines = ["## Accuracy", "", "No accuracy results yet (`pocketbert-bench accuracy …`): the plot shows only "
                 "the MobileBERT paper's reference point.", ""]
        return lines + ([f"![accuracy delta vs speed-up]({plots['accuracy']})", ""] if plots.get("accuracy") else [])
    lines = ["## Accuracy (GLUE metric per task on dev, CoNLL-2003 entity F1 via seqeval)", "",
             "Δ: points against the same model's original (its plain `onnx:fp32`, which equals PyTorch), same task "
             "and split.", "",
             "| model | variant | artifact | task | split | metric | score | Δ vs original | examples |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in sorted(accuracy, key=lambda a: (a["model"], a["task"], str(a.get("variant_name")), row_name(a))):
        lines.append(f"| {a['model']} | {a.get('variant_name') or '-'} | {row_name(a)} | {a['task']} | "
                     f"{a.get('split', '-')} | {a.get('metric', '-')} | {fmt(a.get('score'), 2)} | "
                     f"{fmt(a.get('delta'), 2)} | {a.get('examples', '-')} |")
    notes = sorted({n for a in accuracy for n in a.get("notes") or []})
    lines += [""] + [f"- {n}" for n in notes] + [""]
    if plots.get("accuracy"):
        lines += [f"![accuracy delta vs speed-up]({plots['accuracy']})", ""]
    return lines
