"""Registries of named components with lazy ``"module:attr"`` entry points.

A lazy entry is imported only when it is looked up, so importing a registry never
imports a heavy dependency (Isaac Sim, torch, Ray).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from vlnverse.errors import DependencyNotInstalled, RegistryError

T = TypeVar("T")


def load_entry_point(spec: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise RegistryError(f"invalid entry point {spec!r}; expected 'module:attr'")
    try:
        module = importlib.import_module(module_name)
    except DependencyNotInstalled:
        raise
    except ImportError as exc:
        missing = f"no module named {exc.name!r}" if isinstance(exc, ModuleNotFoundError) and exc.name else str(exc)
        raise RegistryError(f"entry point {spec!r}: cannot import {module_name} ({missing})") from exc
    except SyntaxError as exc:
        raise RegistryError(f"entry point {spec!r}: {module_name} has a syntax error: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise RegistryError(f"entry point {spec!r}: {module_name} has no {attr!r}") from exc


class Registry(Generic[T]):
    """A name → component map; values may be objects or lazy ``"module:attr"`` strings."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str, *, overwrite: bool = False) -> None:
        """Register ``entry`` (an object or a lazy ``"module:attr"`` string) under ``name``."""
        if name in self._entries and not overwrite:
            raise RegistryError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry

    def decorator(self, name: str) -> Callable[[T], T]:
        """Class/function decorator form of :meth:`register`."""

        def wrap(obj: T) -> T:
            self.register(name, obj)
            return obj

        return wrap

    def get(self, name: str) -> T:
        """Return the component registered as ``name``, importing it if lazy."""
        if name not in self._entries:
            valid = ", ".join(sorted(self._entries)) or "(none)"
            raise RegistryError(f"unknown {self.kind} {name!r}; valid names: {valid}")
        entry = self._entries[name]
        if isinstance(entry, str):
            entry = load_entry_point(entry)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
