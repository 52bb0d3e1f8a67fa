"""Registry of architecture families: one module per family, which registers itself
(``register(BertFamily())``); every module of this package is found by :class:`~runtime.registry.Registry`."""

from __future__ import annotations

from pocketbert.runtime.registry import Registry

from .base import ActivationSite, Family, FoldSite, ResidualStream, ScalePair, is_nonorm, is_relu

FAMILIES: Registry[Family] = Registry("family", __name__)


def register(family: Family) -> Family:
    """Add a family (called by the family's module when it is imported); a model_type has one family."""
    clash = [t for t in family.model_types if family_for(t) not in (None, family)]
    if clash:
        raise ValueError(f"model_type {clash[0]!r} registered twice")
    return FAMILIES.register(family)


def families() -> list[Family]:
    """Registered families, by name."""
    return FAMILIES.all()


def family_for(model_type: str) -> Family | None:
    return next((f for f in FAMILIES.all() if model_type in f.model_types), None)


def supported_summary() -> str:
    return ", ".join(f"{f.name} ({f.description})" for f in families())

__all__ = ["ActivationSite", "Family", "FoldSite", "ResidualStream", "ScalePair", "is_nonorm", "is_relu", "register",
           "FAMILIES", "families", "family_for", "supported_summary"]
