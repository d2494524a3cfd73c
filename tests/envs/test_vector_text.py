"""Our async vector env delivers every observation field a single env delivers, text included."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gymnasium import spaces

import vlnverse.envs
from tests.bundled import bundled_dataset
from vlnverse.envs.vector import async_vector_env

SENSORS = {"rgb": {"kind": "rgb", "width": 24, "height": 16}, "depth": {"kind": "depth", "width": 24, "height": 16}}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return bundled_dataset(tmp_path_factory.mktemp("eqa"), tasks=("eqa",), per_scene=2)


def _assert_same(space, batch, row, single, where):
    """Sub-env ``row`` of the vector observation ``batch`` equals the single env's ``single``."""
    if isinstance(space, spaces.Dict):
        assert set(batch) == set(single), where
        for key, sub in space.spaces.items():
            _assert_same(sub, batch[key], row, single[key], f"{where}.{key}")
    elif isinstance(space, spaces.Tuple):
        for k, sub in enumerate(space.spaces):
            _assert_same(sub, batch[k], row, single[k], f"{where}[{k}]")
    elif isinstance(space, spaces.Text):
        assert batch[row] == single, where
    else:
        assert np.array_equal(np.asarray(batch[row]), np.asarray(single)), where


def test_each_sub_env_observes_what_a_single_env_observes(dataset):
    make = functools.partial(vlnverse.envs.make, dataset=dataset, task="eqa", dialogue=True, sensors=SENSORS)
    singles = [make(), make()]
    vec = async_vector_env([make, make])
    try:
        space = vec.single_observation_space
        kinds = {type(s) for s in space.spaces.values()}
        assert kinds == {spaces.Box, spaces.Discrete, spaces.Text, spaces.Tuple}

        def check(batch, observations, when):
            for row, single in enumerate(observations):
                _assert_same(space, batch, row, single, f"{when} sub-env {row}")

        batch, _ = vec.reset(seed=0)
        observations = [env.reset(seed=0)[0] for env in singles]
        check(batch, observations, "reset")
        assert observations[0]["instruction"] and observations[0]["question"]

        # only sub-env 1 moves on to the next episode; sub-env 0 keeps its observation
        batch, _ = vec.reset(options={"reset_mask": np.array([False, True])})
        observations[1] = singles[1].reset()[0]
        assert observations[1]["question"] != observations[0]["question"]
        check(batch, observations, "masked reset")

        ask = singles[0].unwrapped.ask_action
        answered = []
        for step, actions in enumerate([(ask, 1), (2, ask), (1, 3), (3, 1)]):
            batch, *_ = vec.step(np.asarray(actions, dtype=np.int64))
            observations = [env.step(a)[0] for env, a in zip(singles, actions, strict=True)]
            check(batch, observations, f"step {step}")
            answered += [row for row, obs in enumerate(observations) if obs["oracle_answer"]]
        assert answered == [0, 1]  # the oracle's answers came through the asking sub-env
    finally:
        vec.close()
        for env in singles:
            env.close()
