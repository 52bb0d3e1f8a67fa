"""How a recovery continues: from a refused run's best state kept beside its output (``--resume``,
:mod:`.kept_state`), or from the checkpoint an earlier recovery of the same teacher wrote (the one command's longer
``--budget``)."""

from __future__ import annotations

from ..errors import ConverterInputError
from . import kept_state, loop


def resumed(prepared) -> tuple[dict, dict]:
    """The kept state --resume continues (``prepared``: a :class:`~.recovery.PreparedRecovery`), once it is shown to be this recovery's and the budget is longer."""
    options = prepared.options
    if options.output is None:
        raise ConverterInputError("--resume needs the output whose refused recovery it continues",
                                  "give the same --out as the refused conversion")
    state, record = kept_state.load(options.output, prepared.identity)
    if options.schedule == "joint" and options.budget.fraction(state["step"], state["seconds"],
                                                               len(prepared.batches)) >= 1:
        spent = f"{state['step']} steps, {state['seconds']:.0f} s"
        raise ConverterInputError(f"--resume: the kept state has already spent {spent}, all of --recover-budget "
                                  f"{options.budget.describe()}",
                                  "give a longer --recover-budget (e.g. twice the refused run's) with --resume")
    return state, record


def after_gate(prepared, record: dict, passed: bool) -> str | None:
    """The gate's verdict on ``record``: refused, keep the best state beside the output and return how to
    continue from it; passed, remove an earlier kept state for this output (it is in the bundle now)."""
    options = prepared.options
    if options.output is None:
        return None
    if passed:
        kept_state.discard(options.output)
        return None
    if prepared.best is None or prepared.best.state is None:
        return None
    best = record["best"]
    where = kept_state.keep(options.output, prepared.best.state,
                            {"identity": prepared.identity, "best": best, "dev_curve": record["dev_curve"],
                             "metric": record["metric"], "budget": options.budget.to_json()})
    longer = _doubled(options.budget)
    return (f"its best state (step {best['steps']}, dev {record['metric']} {best[record['metric']]:.2f}) is kept at "
            f"{str(where)!r}: continue it with the same command plus --resume and a longer --recover-budget (e.g. "
            f"--recover-budget {longer} --resume), or pass --allow-accuracy-loss to accept it")


def start_from(student, checkpoint: str) -> None:
    """Load an earlier recovery's weights into ``student`` (the teacher transformed the same way)."""
    from ..checkpoints import loading

    earlier = loading.load(checkpoint).model.state_dict()
    try:
        student.load_state_dict(earlier)
    except RuntimeError as exc:
        raise ConverterInputError(f"{checkpoint} is not a recovery of this teacher with these --opt transforms: its "
                                  f"weights do not fit ({str(exc).splitlines()[0]})",
                                  "run the recovery from the start (without continuing from it)") from None


def _doubled(budget: loop.Budget) -> str:
    if budget.seconds is not None:
        return f"{budget.seconds * 2 / 60:g}m"
    if budget.steps is not None:
        return f"{budget.steps * 2}steps"
    return f"{budget.epochs * 2:g}epochs"
