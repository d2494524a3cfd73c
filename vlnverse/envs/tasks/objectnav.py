"""ObjectNav in the env: a STOP near an instance's viewpoint succeeds only with the instance in view.

The episodes (:mod:`vlnverse.tasks.objectnav`) hold one goal per instance of the category;
a STOP within a goal's radius succeeds when that goal's instance is visible from the
agent's eye (:func:`vlnverse.tasks.objectnav.instance_visible`), as the evaluation judges it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlnverse.envs.tasks.base import TaskComponent


class ObjectNavTask(TaskComponent):
    """The visibility-gated success of ObjectNav episodes (any env may play them)."""

    @classmethod
    def wanted(cls, task: str | None, settings: Mapping[str, Any]) -> bool:
        return True

    def applies(self, episode: Any) -> bool:
        return episode.source is not None and episode.source.task == "objectnav"

    def judge(self, reached: Sequence[int], pose: Any) -> bool:
        from vlnverse.tasks import objectnav

        env = self.env
        eye = env.occupancy.floor_height + env.agent_spec.camera_height
        goals = env.episode.source.goals
        return any(objectnav.instance_visible(env.sim, goals[k].object_id, pose.xy, eye) for k in reached)
