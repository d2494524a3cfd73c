"""The env's task components, one module per task family (see :mod:`vlnverse.envs.tasks.base`).

Which families exist, and in which order the env composes them, is the task registry's
(:mod:`vlnverse.tasks.registry`): a family's ``component`` names its class here;
:class:`~vlnverse.envs.tasks.taskset.TaskSet` holds one env's components.
"""

from __future__ import annotations

from vlnverse.envs.tasks.base import StepOutcome, TaskComponent
from vlnverse.envs.tasks.taskset import TaskSet, component_classes, wanted_components

__all__ = ["StepOutcome", "TaskComponent", "TaskSet", "component_classes", "wanted_components"]
