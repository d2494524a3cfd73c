"""Evaluation, in four subsystems below the agent interface:

- :mod:`vlnverse.eval.running`: the harness (``evaluate``) that runs an agent over episode
  sets, one episode's run (:mod:`~vlnverse.eval.running.runner`), workers and executors;
- :mod:`vlnverse.eval.scoring`: episode records and the paper's metrics, aggregated with
  bootstrap intervals;
- :mod:`vlnverse.eval.reporting`: summaries, pictures, ``index.html`` and the episode viewer;
- :mod:`vlnverse.eval.verification`: ``eval verify``, results bundles and the re-run.

Beside them: the agent interface (:mod:`~vlnverse.eval.agent`), agents by name
(:mod:`~vlnverse.eval.registry`), the baseline and ``replay`` agents, and the tracks
(:mod:`~vlnverse.eval.tracks`).
"""
