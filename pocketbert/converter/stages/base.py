"""The stage interface, and the check that the stages' order honours what each declares it reads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..conversion import Conversion


class Stage:
    """One step of the conversion over the :class:`~pocketbert.converter.conversion.Conversion` record.

    ``reads`` names the record's parts the stage uses (given ones, such as ``options``, or earlier stages'
    results); ``produces`` names the parts it sets, each a result dataclass.  A stage touches no other part.
    """

    #: the key of its seconds in the manifest's stage_seconds, and of its events
    name: str = ""
    reads: tuple[str, ...] = ()
    produces: tuple[str, ...] = ()

    def run(self, conversion: Conversion) -> None:
        raise NotImplementedError


class StageContractError(RuntimeError):
    """The stages as wired cannot run: a bug in the converter, never something a user can fix."""


def check_order(stages: Sequence[Stage], given: Iterable[str], parts: Iterable[str]) -> None:
    """Refuse, before anything runs, a stage reading a part no earlier stage produced (nor the plan and
    options give), a stage producing a part the record lacks, and a part produced twice."""
    known, available = set(given) | set(parts), set(given)
    producer = {part: stage.name for stage in stages for part in stage.produces}
    for stage in stages:
        for part in stage.reads:
            if part in available:
                continue
            where = (f"stage {producer[part]!r} produces it, but runs later" if part in producer
                     else "no stage produces it")
            raise StageContractError(f"converter stage {stage.name!r} reads {part!r} before it exists: {where}")
        for part in stage.produces:
            if part not in known:
                raise StageContractError(f"converter stage {stage.name!r} produces {part!r}, which is not a part "
                                         f"of the conversion record ({', '.join(sorted(known))})")
            if part in available:
                raise StageContractError(f"converter stage {stage.name!r} produces {part!r}, which is already "
                                         "there (given, or produced by an earlier stage)")
            available.add(part)


def check_produced(stage: Stage, before: set[str], after: set[str]) -> None:
    """After ``stage`` ran: it set exactly the parts it declares (``before``/``after``: the parts present)."""
    added = after - before
    if added != set(stage.produces):
        missing, undeclared = set(stage.produces) - added, added - set(stage.produces)
        raise StageContractError(f"converter stage {stage.name!r} did not keep its contract: "
                                 + "; ".join([*(f"{p!r} declared but not produced" for p in sorted(missing)),
                                              *(f"{p!r} produced but not declared" for p in sorted(undeclared))]))
