"""Registry of architecture families: one module per family, registered on import."""

from __future__ import annotations

from .base import ActivationSite, Family, FoldSite, ResidualStream, is_nonorm

_REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family to the registry (call at import time of the family's module)."""
    for model_type in family.model_types:
        if model_type in _REGISTRY:
            raise ValueError(f"model_type {model_type!r} registered twice")
        _REGISTRY[model_type] = family
    return family


def families() -> list[Family]:
    """Registered families, each once, in registration order."""
    seen: dict[str, Family] = {}
    for family in _REGISTRY.values():
        seen.setdefault(family.name, family)
    return list(seen.values())


def family_for(model_type: str) -> Family | None:
    return _REGISTRY.get(model_type)


def supported_summary() -> str:
    return ", ".join(f"{f.name} ({f.description})" for f in families())


# Importing a family module registers it.  Adding a family = adding a module and a line here.
from . import bert, distilbert, mobilebert  # noqa: E402,F401

__all__ = ["ActivationSite", "Family", "FoldSite", "ResidualStream", "is_nonorm", "register", "families", "family_for",
           "supported_summary"]
