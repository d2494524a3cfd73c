"""VLNVerse: a full-stack Vision-Language Navigation benchmark.

Three layers (paper §3): ``vlnverse.scene`` (environment), ``vlnverse.sim`` (simulator),
``vlnverse.tasks`` (tasks, datasets, metrics), joined by the gymnasium envs in
``vlnverse.envs``.
"""

__version__ = "0.1.0"
