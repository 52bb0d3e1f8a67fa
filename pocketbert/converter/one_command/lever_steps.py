"""The one command's steps, run in its work folder: each planned step is skipped (done in an earlier run, its files
unchanged), continued (a lever that can train further, given a larger share than it spent) or run, and scored on the
dev set.  What each step cost and what its share of the budget bought (training steps in minutes) is kept in
``steps.json`` and said; a step that leaves the score below the gate with steps still to go stops the run there,
since the steps after it only lose more (unless one of them distils a new body from the teacher, as ``shrink`` does:
it can win the loss back): the refusal names the cost of every step and what a longer budget continues."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..checkpoints import loading
from ..checkpoints.training_record import shipped_scores, training_record
from ..errors import AccuracyLossRefused
from ..levers import Step
from ..levers.plan import duration
from .lever_work import changed_files, digest, fresh, load_state, save_state, step_files


@dataclass
class Gate:
    teacher: float
    drop: float
    metric: str

    @property
    def value(self) -> float:
        return self.teacher - self.drop

    def words(self) -> str:
        return f"the gate {self.value:.2f} (the teacher's {self.teacher:.2f} − {self.drop:g})"


@dataclass
class StepCosts:
    """Each step's dev score and what its share of the budget bought, in order, for the log and a refusal."""

    gate: Gate
    rows: list[tuple[str, float, dict | None]] = field(default_factory=list)  # (step, score, trained)

    def add(self, what: str, score: float, trained: dict | None) -> None:
        self.rows.append((what, score, trained))

    def table(self) -> list[str]:
        lines, before = [f"  teacher{'':<34}{self.gate.teacher:7.2f}"], self.gate.teacher
        for index, (what, score, trained) in enumerate(self.rows, 1):
            bought = f"  {bought_words(trained)}" if trained else ""
            change = shown_change(before, score)
            lines.append(f"  {index}. {what:<36}{score:7.2f}  ({change:+.2f}){bought}")
            before = score
        return lines


def shown_change(before: float, score: float) -> float:
    """The change between two scores as printed to two decimals (the figures shown, never "-0.00")."""
    return round(score, 2) - round(before, 2) + 0


def bought_words(trained: dict) -> str:
    seconds = trained["seconds"]
    took = f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
    return f"{trained['steps']:,} training step{'' if trained['steps'] == 1 else 's'} in {took}"


def run_steps(run, made, work: Path, *, start: tuple[str, str], dev, gate: Gate, log):
    """Each planned step in order, skipping or continuing those done; returns (last checkpoint, its dev score,
    the costs).  Stops with :class:`AccuracyLossRefused` when a step leaves the score below the gate with steps
    still to go."""
    source, key = start
    teacher, recover = run.checkpoint, made.goal.recover
    recorded, costs, score = None, StepCosts(gate), gate.teacher
    for index, planned in enumerate(made.steps, 1):
        key = digest(key, planned.lever.name, json.dumps(planned.setting), ",".join(recover))
        state = load_state(work, run.overwrite)
        step = Step(source=source, out=work / f"{index}-{planned.lever.name}", teacher=teacher, task=run.task,
                    dev=run.dev, setting=planned.setting, budget=planned.budget, opts=recover, data_dir=run.data_dir,
                    threads=run.threads, train_limit=run.train_limit, augment=run.augment, log=log,
                    source_scores=recorded)
        log(f"step {index} of {len(made.steps)}: {planned.describe()}")
        regaining = _regaining_after(made, index)
        done = state[key] = run_step(planned, step, state.get(key), work=work, dev=dev, log=log, gate=gate.value,
                                     regained_by=regaining.describe() if regaining else None)
        save_state(work, state)
        source, score = str(work / done["out"]), done["score"]
        costs.add(planned.describe(), score, done.get("trained"))
        recorded = _recorded_scores(work / done["out"], dev.metric) if planned.lever.records_score else None
        teacher = source if planned.lever.new_teacher else teacher
        key = digest(key, json.dumps(done["budget"]))
        if score < gate.value and index < len(made.steps):
            _stop_unless_regained(made, index, costs=costs, work=work, metric=dev.metric, score=score, log=log)
    return source, score, costs


def _regaining_after(made, index: int):
    """The first planned step after step ``index`` (1-based) that distils a new body from the teacher, or None."""
    return next((step for step in made.steps[index:] if step.lever.regains), None)


def _stop_unless_regained(made, index: int, *, costs: StepCosts, work: Path, metric: str, score: float, log) -> None:
    """Stop after step ``index`` (below the gate) unless a step still to go distils a new body from the teacher."""
    regaining = _regaining_after(made, index)
    if regaining is None:
        raise _stopped_early(made, index, costs=costs, work=work, metric=metric, score=score)
    log(f"  below {costs.gate.words()}, but {regaining.describe()} distils from the teacher and can win it back: "
        "going on")


def run_step(planned, step: Step, done: dict | None, *, work: Path, dev, log, gate: float | None = None,
             regained_by: str | None = None) -> dict:
    """Run ``step``, or continue it, or keep what an earlier run did; returns its record (``out`` relative to
    ``work``).  A step done within ``gate``, or before ``regained_by`` (a later step that distils a new body from
    the teacher, where the loss is judged), is kept as it is: a longer budget goes to the step the refusal named
    (continuing an earlier one would make every step after it run again)."""
    continued = 0
    why = changed_files(work / done["out"], done.get("files")) if done else None
    if why:  # reused only as written: an edited checkpoint would be converted and gated on its old score
        log(f"  {work / done['out']} was done in an earlier run, but {why}: running the step again")
        done = None
    if done:
        within = gate is not None and done["score"] >= gate
        more = None if within or regained_by else _more(planned, done)
        if more is None:
            kept = ", within the gate" if within else f", below the gate for {regained_by} to win back"
            log(f"  done in an earlier run ({work / done['out']}): dev {dev.metric} {done['score']:.2f}"
                f"{kept if _more(planned, done) else ''}; skipped")
            return done
        continued = done.get("continued", 0) + 1
        mine = work / done["out"]
        step = replace(step, budget=more, out=step.out.with_name(f"{step.out.name}-more{continued}"),
                       resume_from=str(mine),
                       resume_scores=_recorded_scores(mine, dev.metric) if planned.lever.records_score else None)
        log(f"  continued from {mine} for {more.describe()} more")
    path = Path(planned.lever.run(replace(step, out=fresh(step.out))))
    what = f"after {planned.lever.name}"
    score = _recorded_score(path, dev, what, log) if planned.lever.records_score else None
    trained = _trained(path, done) if planned.lever.trains else None
    if trained:
        log(f"  {planned.lever.name}: {bought_words(trained)}" + (f" over {continued + 1} runs" if continued else "")
            + f" (its share of the budget: {duration(planned.budget)})")
    return {"lever": planned.lever.name, "setting": planned.setting, "out": path.name,
            "budget": planned.budget.to_json() if planned.budget is not None else None,
            "score": score_checkpoint(str(path), dev, what, log) if score is None else score,
            "continued": continued, "files": step_files(path), "trained": trained}


def _trained(path: Path, done: dict | None) -> dict | None:
    """The training steps and seconds a training step's checkpoint records, added to an earlier run's when the
    step continued it."""
    training = (training_record(path) or {}).get("training") or {}
    steps, seconds = training.get("steps"), training.get("seconds")
    if not isinstance(steps, int) or not isinstance(seconds, (int, float)):
        return None
    earlier = (done or {}).get("trained") or {"steps": 0, "seconds": 0}
    return {"steps": earlier["steps"] + steps, "seconds": round(earlier["seconds"] + seconds, 1)}


def longer_budget_fix(made, costs: StepCosts, work: Path) -> str:
    """What wins back the loss after a refusal: the first step that fell below the gate continues with a longer
    --budget when it trains (the steps before it are within the gate and kept); one that trains nothing needs a
    gentler setting.  A loss before a step that distils a new body from the teacher is not counted: that step had
    the chance to win it back."""
    rows = list(enumerate(costs.rows))
    start = max((i for i, _ in rows if made.steps[i].lever.regains), default=0)
    index, (what, score, _) = next((i, row) for i, row in rows[start:] if row[1] < costs.gate.value)
    step = made.steps[index]
    before = costs.rows[index - 1][1] if index else costs.gate.teacher
    if step.lever.continues and step.budget is not None:
        return (f"run the same command with a longer --budget: {what}, the step that fell below the gate, continues "
                f"from its checkpoint in {work} for the part of its larger share not yet spent, the steps before it "
                "are kept, and the steps after it run again from what it gives (or accept more loss with "
                "--max-accuracy-drop)")
    cost = shown_change(score, before)  # the drop, as the table shows it
    kind = "does not train further from its checkpoint" if step.lever.trains else "trains nothing"
    return (f"{what} cost {cost:.2f} and {kind}: give the target more room (a larger --max-size or --max-macs; the "
            "plan then sets it gentler or leaves it out), or accept more loss with --max-accuracy-drop")


def _stopped_early(made, index: int, *, costs: StepCosts, work: Path, metric: str, score: float):
    rest = [step.describe() for step in made.steps[index:]]
    return AccuracyLossRefused(
        f"after step {index} of {len(made.steps)} ({made.steps[index - 1].describe()}) the dev {metric} is "
        f"{score:.2f}, below {costs.gate.words()}, with {len(rest)} step{'' if len(rest) == 1 else 's'} to go "
        f"({', '.join(rest)}) that only {'loses' if len(rest) == 1 else 'lose'} more: stopped here, the trained "
        f"checkpoints kept in {work}. What each step cost:\n"
        + "\n".join(costs.table()),
        longer_budget_fix(made, costs, work))


def _more(planned, done: dict):
    """The budget ``planned`` has beyond what ``done`` spent, for a lever that continues, never more than its
    planned share; None otherwise."""
    from ..training.loop import Budget

    if not planned.lever.continues or planned.budget is None or not done.get("budget"):
        return None
    spent, new = done["budget"], planned.budget.to_json()
    for unit in ("steps", "seconds"):
        if unit in new and unit in spent and new[unit] > spent[unit]:
            more = min(new[unit], new[unit] - spent[unit])
            return Budget(**{unit: int(more) if unit == "steps" else more})
    return None


def _recorded_scores(path: Path, metric: str) -> dict[str, float] | None:
    """The dev scores a lever recorded for its output (``checkpoint_job.record_shipped``), taken on this run's dev
    set: every step is given the same one.  None when they lack ``metric``: the next step then scores its source."""
    scores = shipped_scores(training_record(path) or {})
    return scores if metric in scores else None


def _recorded_score(path: Path, dev, what: str, log) -> float | None:
    """The dev score the lever recorded for its output, or None when it recorded none in the dev set's metric."""
    scores = _recorded_scores(path, dev.metric)
    if scores is None:
        return None
    log(f"  dev {dev.metric} {what}: {scores[dev.metric]:.2f}")
    return scores[dev.metric]


def score_checkpoint(checkpoint: str, dev, what: str, log) -> float:
    from ..training import checkpoint_job as job
    from ..training.finetune import eval_length

    loaded = loading.load(checkpoint)
    value = job.score(loaded, dev, eval_length(loaded))[dev.metric]
    log(f"  dev {dev.metric} {what}: {value:.2f}")
    return value
