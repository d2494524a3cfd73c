"""VLNVerse: a full-stack Vision-Language Navigation benchmark.

Three layers (paper §3): ``vlnverse.scene`` (environment), ``vlnverse.sim`` (simulator),
``vlnverse.tasks`` (tasks, datasets, metrics), joined by the gymnasium envs in
``vlnverse.envs``. Importing it registers the gymnasium id ``VLNVerse/Nav-v0`` (without
importing gymnasium: the registration happens when gymnasium is imported).
"""

from vlnverse import gym_registration

__version__ = "0.1.0"

gym_registration.install()  # ``gymnasium.make("VLNVerse/Nav-v0")`` works once gymnasium is imported


def __getattr__(name: str):
    """Lazy top-level helpers: ``vlnverse.make`` imports gymnasium and the envs on first use."""
    if name == "make":
        from vlnverse.envs import make

        return make
    raise AttributeError(f"module 'vlnverse' has no attribute {name!r}")
