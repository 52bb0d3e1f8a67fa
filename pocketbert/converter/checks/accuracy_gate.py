"""The accuracy gate of the commands that change a checkpoint's accuracy (narrow, shrink, factor-embeddings,
int4-tune), the same as the conversion's for nonorm/relu: a result that loses more than ``max_drop`` points of
the task metric on the dev split against its source is refused before anything is written, unless the loss is
accepted (``--allow-accuracy-loss``), when it is said as a warning.  ``--ffn-width 1`` would otherwise write a
chance-level model and exit 0."""

from __future__ import annotations

from ..errors import AccuracyLossRefused

#: points of the task metric a result may lose against its source (the conversion's --max-accuracy-drop default)
MAX_DROP = 1.0


def check(command: str, metric: str, before: dict[str, float], after: dict[str, float], *, allow: bool,
          max_drop: float = MAX_DROP, log=print) -> float:
    """``before``/``after``: the source's and the result's dev scores; returns the loss in points (negative: a
    gain).  Refuses a loss over ``max_drop`` unless ``allow``."""
    loss = before[metric] - after[metric]
    if loss <= max_drop:
        return loss
    message = (f"{command} lost {loss:.2f} points of dev {metric} against its source ({before[metric]:.2f} -> "
               f"{after[metric]:.2f}), more than --max-accuracy-drop {max_drop:g}")
    if not allow:
        raise AccuracyLossRefused(message + "; refusing to write a silently degraded checkpoint (nothing was "
                                  "written)", f"{_lever(command)}, or pass --allow-accuracy-loss to accept it "
                                  "(or raise --max-accuracy-drop)")
    log(f"warning: {message} (accepted: --allow-accuracy-loss, or a step of the one command, which gates its end)")
    return loss


def _lever(command: str) -> str:
    return {"narrow": "keep more units (a larger --ffn-width) or distil after the refit (--budget 10m)",
            "shrink": "keep more blocks (a larger --layers) or distil longer (--budget)",
            "factor-embeddings": "factor at a larger --rank or re-tune longer (--retune)",
            "int4-tune": "tune longer (--budget)"}.get(command, "change less")
