"""Registries of named components with lazy ``"module:attr"`` entry points.

A lazy entry is imported only when it is looked up, so importing a registry never
imports a heavy dependency (Isaac Sim, torch, Ray).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
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


def load_user_entry_point(spec: str) -> Any:
    """Import a user's ``"module:attr"`` or ``"path/to/file.py:attr"``.

    A ``.py`` path (relative to the current folder) is imported as a module of its own, its
    folder put on ``sys.path`` so that it can import its neighbours. A module that is not
    importable is looked for in the current folder too (``vlnverse`` run as a console script
    does not have it on ``sys.path``). Errors say where it was looked for.
    """
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise RegistryError(f"invalid entry point {spec!r}; expected 'module:attr' or 'file.py:attr'")
    if target.endswith(".py") or os.sep in target or "/" in target:
        module = _import_file(spec, Path(target))
    else:
        module = _import_module_here(spec, target)
    try:
        return getattr(module, attr)
    except AttributeError:
        names = sorted(n for n in vars(module) if not n.startswith("_"))
        raise RegistryError(f"entry point {spec!r}: {module.__name__} ({getattr(module, '__file__', '?')}) has no "
                            f"{attr!r}; it defines: {', '.join(names) or '(nothing)'}") from None


def _import_file(spec: str, path: Path) -> Any:
    """The module of the Python file ``path``, imported once per absolute path."""
    path = path.expanduser().resolve()
    if not path.is_file():
        raise RegistryError(f"entry point {spec!r}: no file {path}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"vlnverse_user_{path.stem if path.stem.isidentifier() else 'module'}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise RegistryError(f"entry point {spec!r}: {path} is not an importable Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, DependencyNotInstalled):
            raise
        if isinstance(exc, (ImportError, SyntaxError)):
            raise RegistryError(f"entry point {spec!r}: importing {path} failed: {exc}") from exc
        raise
    return module


def _import_module_here(spec: str, module_name: str) -> Any:
    """``importlib.import_module``, retried with the current folder on ``sys.path``."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.partition(".")[0]
        if exc.name not in (top, module_name) and not module_name.startswith(f"{exc.name}."):
            raise RegistryError(f"entry point {spec!r}: importing {module_name} failed: {exc}") from exc
    except DependencyNotInstalled:
        raise
    except (ImportError, SyntaxError) as exc:
        raise RegistryError(f"entry point {spec!r}: importing {module_name} failed: {exc}") from exc
    here = Path.cwd()
    searched = {str(Path(p or ".").resolve()) for p in sys.path}
    if str(here) in searched or not any(c.exists() for c in (here / f"{top}.py", here / top)):
        looked = list(dict.fromkeys([str(here), *(str(Path(p or ".").resolve()) for p in sys.path)]))
        raise RegistryError(
            f"entry point {spec!r}: no module named {module_name!r}; looked in the current folder "
            f"{here} (for {top}.py or {top}/) and on sys.path ({', '.join(looked)}); give a file "
            f"instead ('path/to/{top.split('.')[-1]}.py:ATTR') or add its folder to PYTHONPATH")
    sys.path.insert(0, str(here))
    importlib.invalidate_caches()
    return _import_module_here(spec, module_name)


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
