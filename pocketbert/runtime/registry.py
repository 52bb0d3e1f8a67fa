"""One way of registering a plug-in, for every kind: architecture families, ``--opt`` transforms, export
backends and runtime backends.

A plug-in is one module in its kind's package.  The module declares what it is and its properties on
the object it registers (``register(BertFamily())``, ``register(Opt("relu", …))``,
``register(OnnxBackend)``), and the kind's :class:`Registry` finds it by importing every module of the
package (``pkgutil``) the first time anyone asks.  So adding one is adding a module: no import line and
no list to extend, and every list a user sees (CLI choices, recipe names, the runtime's backend order)
is read from the registry.

Torch-free, so that the runtime's backends use it too.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """The registered plug-ins of one kind, by name, in their declared ``order`` (then by name).

    ``package``: the dotted name of the package whose modules register themselves.  Modules whose name
    starts with ``_`` and sub-packages are helpers, not plug-ins, and are not imported by discovery."""

    def __init__(self, kind: str, package: str, name: Callable[[T], str] = lambda item: item.name):
        self.kind = kind
        self.package = package
        self._name = name
        self._items: dict[str, T] = {}
        self._lock = threading.RLock()
        self._discovering = False
        self._discovered = False

    def register(self, item: T) -> T:
        """Add ``item`` (called by the plug-in's module when it is imported); another of the same name is an
        error."""
        name = self._name(item)
        known = self._items.get(name)
        if known is not None and known is not item:
            raise ValueError(f"{self.kind} {name!r} registered twice: {known!r} and {item!r}")
        self._items[name] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove a plug-in (tests register one for a while)."""
        self._items.pop(name, None)

    def discover(self) -> None:
        """Import every module of the package once, so that each registers what it declares."""
        if self._discovered:
            return
        with self._lock:  # other threads wait until every module is imported
            if self._discovered or self._discovering:  # a plug-in's module asking while it is imported
                return
            self._discovering = True
            try:
                package = importlib.import_module(self.package)
                for module in pkgutil.iter_modules(package.__path__):
                    if not module.ispkg and not module.name.startswith("_"):
                        importlib.import_module(f"{self.package}.{module.name}")
            finally:
                self._discovering = False
            self._discovered = True

    def all(self) -> list[T]:
        self.discover()
        return sorted(self._items.values(), key=lambda item: (getattr(item, "order", 0), self._name(item)))

    def names(self) -> tuple[str, ...]:
        return tuple(self._name(item) for item in self.all())

    def get(self, name: str) -> T | None:
        self.discover()
        return self._items.get(name)

    def __getitem__(self, name: str) -> T:
        item = self.get(name)
        if item is None:
            raise KeyError(f"no {self.kind} named {name!r}; registered: {', '.join(self.names())}")
        return item

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[T]:
        return iter(self.all())

