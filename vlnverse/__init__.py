"""VLNVerse: a full-stack Vision-Language Navigation benchmark.

Three layers (paper §3): ``vlnverse.scene`` (environment), ``vlnverse.sim`` (simulator),
``vlnverse.tasks`` (tasks, datasets, metrics), joined by the gymnasium envs in
``vlnverse.envs``. Importing it registers the gymnasium id ``VLNVerse/Nav-v0`` (without
importing gymnasium: the registration happens when gymnasium is imported).
"""

import os
import sys


def _untrusted_cwd() -> None:
    """Under ``python -m vlnverse``, take the current folder (which ``-m`` puts first on
    ``sys.path``) off it before anything else is imported: no file of the folder a command runs in
    (an evaluation folder being verified, say) may stand in for a module. A user's ``module:attr``
    agent is still looked for there, on purpose (:func:`vlnverse.registry.load_user_entry_point`)."""
    if sys.argv[:1] == ["-m"] and sys.path and not sys.flags.safe_path \
            and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.curdir):
        del sys.path[0]


_untrusted_cwd()

from vlnverse import gym_registration  # noqa: E402

__version__ = "0.1.0"

gym_registration.install()  # ``gymnasium.make("VLNVerse/Nav-v0")`` works once gymnasium is imported


#: The public API, ``name -> "module:attr"``, imported on first use (``import vlnverse``
#: stays light). docs/api.md documents it.
_API = {
    "make": "vlnverse.envs:make",
    "Agent": "vlnverse.eval.agent:Agent",
    "EpisodeInfo": "vlnverse.eval.agent:EpisodeInfo",
    "Ask": "vlnverse.eval.agent:Ask",
    "Answer": "vlnverse.eval.agent:Answer",
    "Inconclusive": "vlnverse.eval.agent:Inconclusive",
    "make_agent": "vlnverse.eval.registry:make_agent",
    "register_agent": "vlnverse.eval.registry:register_agent",
    "EvalConfig": "vlnverse.eval.running.harness:EvalConfig",
    "EvalResult": "vlnverse.eval.running.harness:EvalResult",
    "evaluate": "vlnverse.eval.running.harness:evaluate",
    "Track": "vlnverse.eval.tracks:Track",
    "get_track": "vlnverse.eval.tracks:get_track",
    "register_track": "vlnverse.eval.tracks:register_track",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    """The public API's names, imported on first use (``vlnverse.make`` imports gymnasium
    and the envs then)."""
    if name not in _API:
        raise AttributeError(f"module 'vlnverse' has no attribute {name!r}")
    from vlnverse.registry import load_entry_point

    value = load_entry_point(_API[name])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
