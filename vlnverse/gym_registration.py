"""The gymnasium ids of VLNVerse, registered as soon as gymnasium is (lazily).

``import vlnverse`` calls :func:`install`: when gymnasium's registry is already imported
the ids are registered at once, otherwise a one-shot import hook registers them right after
gymnasium imports its registry, so ``gymnasium.make("VLNVerse/Nav-v0")`` works after a bare
``import vlnverse`` without making that import pay for gymnasium.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

NAV_ENV_ID = "VLNVerse/Nav-v0"
ENTRY_POINTS = {NAV_ENV_ID: "vlnverse.envs.nav_env:NavEnv"}
REGISTRY_MODULE = "gymnasium.envs.registration"


def register_ids(registration: ModuleType) -> None:
    """Register every VLNVerse id in ``registration`` (gymnasium's registration module) once."""
    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in registration.registry:
            registration.register(id=env_id, entry_point=entry_point)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds gymnasium's registry module with the normal path finder and registers our ids
    once it has executed; removes itself on first use."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != REGISTRY_MODULE:
            return None
        _remove_hook()
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            register_ids(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _remove_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _RegisterAfterImport)]


def install() -> None:
    """Register the ids now if gymnasium's registry is loaded, else when it is."""
    registration = sys.modules.get(REGISTRY_MODULE)
    if registration is not None:
        register_ids(registration)
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
