"""The stage interface."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..conversion import Conversion


class Stage:
    #: the key of its seconds in the manifest's stage_seconds, and of its events
    name: str = ""

    def run(self, conversion: Conversion) -> None:
        raise NotImplementedError
