"""The openpi protocol's pieces on their own: the msgpack-numpy codec, metadata and action
checks, and how a served agent is reset with and without control frames."""

from __future__ import annotations

import math

import numpy as np
import pytest

msgpack = pytest.importorskip("msgpack")

from gymnasium import spaces  # noqa: E402

from vlnverse.agents.remote.actions import check_action, reply_actions  # noqa: E402
from vlnverse.agents.remote.client import RemoteConfig, parse_metadata  # noqa: E402
from vlnverse.agents.remote.protocol import RemotePolicyError, pack, resize_nearest, unpack  # noqa: E402
from vlnverse.agents.remote.server import PolicySession  # noqa: E402
from vlnverse.errors import ConfigError  # noqa: E402
from vlnverse.eval.agent import Agent  # noqa: E402

LIMIT = 1 << 20


def test_arrays_scalars_and_text_make_the_round_trip():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    pose = np.array([1.5, -2.0, 0.0, math.pi / 2], dtype=np.float32)
    back = unpack(pack({"rgb": rgb, "pose": pose, "instruction": "go", "n": np.int64(3), "ids": (1, 2)}), LIMIT)
    assert back["rgb"].dtype == np.uint8 and np.array_equal(back["rgb"], rgb)
    assert back["pose"].dtype == np.float32 and np.array_equal(back["pose"], pose)
    assert back["instruction"] == "go" and back["n"] == 3 and back["n"].dtype == np.int64 and back["ids"] == [1, 2]


def test_openpi_frames_with_str_keys_are_read_too():
    frame = msgpack.packb({"x": {"__ndarray__": True, "data": b"\x01\x00\x02\x00", "dtype": "<u2", "shape": [2]}})
    assert unpack(frame, LIMIT)["x"].tolist() == [1, 2]


@pytest.mark.parametrize("frame, says", [
    ("RuntimeError: boom", "the peer sent an error: RuntimeError: boom"),
    (b"\xc1 not msgpack", "frame is not msgpack: FormatError: it starts with bytes c1 20 6e"),
    (msgpack.packb([1, 2]), "not a map"),
    (msgpack.packb({"x": {b"__ndarray__": True, b"data": b"\x00" * 8, b"dtype": "|O", b"shape": [1]}}),
     "refusing an array of dtype object"),
    (msgpack.packb({"x": {b"__ndarray__": True, b"data": b"\x00" * 3, b"dtype": "<f4", b"shape": [1]}}),
     "array bytes do not match"),
    (msgpack.packb({"x": {b"__ndarray__": True, b"dtype": "<f4"}}), "malformed array"),
    (b"\x00" * (LIMIT + 1), "over the 1048576-byte limit"),
])
def test_bad_frames_are_one_clear_error(frame, says):
    with pytest.raises(RemotePolicyError, match=says):
        unpack(frame, LIMIT)


def test_object_arrays_are_never_sent():
    with pytest.raises(RemotePolicyError, match="dtype object"):
        pack({"x": np.array([object()])})


def test_metadata():
    assert parse_metadata({"action_space": "waypoint", "image_size": np.array([120, 160])}) == ("waypoint", (120, 160))
    assert parse_metadata({"action_space": "discrete", "other": 1}) == ("discrete", None)
    with pytest.raises(RemotePolicyError, match="declares action_space None"):
        parse_metadata({})
    with pytest.raises(RemotePolicyError, match="out of range"):
        parse_metadata({"action_space": "discrete", "image_size": [0, 5]})


DISCRETE = spaces.Discrete(4)
WAYPOINT = spaces.Box(np.array([0, -math.pi, 0], np.float32), np.array([3, math.pi, 1], np.float32))


def parse_action(reply, space):
    (value,) = reply_actions(reply)
    return check_action(value, space)


@pytest.mark.parametrize("action, space, expected", [
    (2, DISCRETE, 2), (np.array([3]), DISCRETE, 3), (1.0, DISCRETE, 1), (np.int64(1), DISCRETE, 1),
    ([1.0, -0.5, 0.0], WAYPOINT, [1.0, -0.5, 0.0]),
])
def test_valid_actions(action, space, expected):
    got = parse_action({"action": action}, space)
    assert (got.tolist() if isinstance(got, np.ndarray) else got) == expected


@pytest.mark.parametrize("reply, space, says", [
    ({"action": 4}, DISCRETE, "outside the declared space"),
    ({"action": 1.5}, DISCRETE, "outside the declared space"),
    ({"action": [1, 2]}, DISCRETE, "outside the declared space"),
    ({"action": float("nan")}, DISCRETE, "not finite"),
    ({"action": [5.0, 0.0, 0.0]}, WAYPOINT, "outside the declared space"),
    ({"action": [1.0, 0.0]}, WAYPOINT, "outside the declared space"),
    ({"action": [1.0, float("inf"), 0.0]}, WAYPOINT, "not finite"),
    ({"action": "left"}, DISCRETE, "'left' is not a number"),
    ({"action": "1"}, DISCRETE, "'1' is not a number"),
    ({"action": True}, DISCRETE, "True is not a number"),
    ({"action": np.bool_(True)}, DISCRETE, "is not a number"),
    ({"action": [True]}, DISCRETE, "is not a number"),
    ({"action": None}, DISCRETE, "None is not a number"),
    ({"action": [1.0, None, 0.0]}, WAYPOINT, "is not a number"),
    ({"actions": []}, DISCRETE, "non-empty list"),
    ({"actions": 1}, DISCRETE, "non-empty list"),
    ({"action": 1, "actions": [1]}, DISCRETE, "both 'action' and 'actions'"),
    ({"server_timing": {}}, DISCRETE, "no 'action' or 'actions'"),
])
def test_invalid_actions(reply, space, says):
    with pytest.raises(RemotePolicyError, match=says):
        for value in reply_actions(reply):
            check_action(value, space)


@pytest.mark.parametrize("chunk, space, expected", [
    (np.array([[1.0], [1.0], [0.0]], np.float32), DISCRETE, [1, 1, 0]),
    ([2, 3], DISCRETE, [2, 3]),
    (np.array([[1.0, 0.5, 0.0], [0.5, -0.5, 1.0]], np.float32), WAYPOINT, [[1.0, 0.5, 0.0], [0.5, -0.5, 1.0]]),
])
def test_a_chunk_is_its_actions_in_order(chunk, space, expected):
    got = [check_action(a, space) for a in reply_actions({"actions": chunk})]
    assert [a.tolist() if isinstance(a, np.ndarray) else a for a in got] == expected


@pytest.mark.parametrize("settings, says", [
    ({"send": ["rgb", "dpeth"]}, "names 'dpeth', which the env does not observe"),
    ({"sensors": "panorama", "send": ["rgb", "depth"]}, "names 'rgb', 'depth'.*rgb_pano_00"),
    ({"replan_steps": 0}, "replan_steps must be a positive integer"),
    ({"replan_steps": True}, "replan_steps must be a positive integer"),
])
def test_bad_remote_settings_are_refused(settings, says):
    with pytest.raises(ConfigError, match=says):
        RemoteConfig(url="ws://127.0.0.1:1", **settings)


def test_panorama_views_oracle_answers_and_chunk_settings_are_accepted():
    config = RemoteConfig(url="ws://127.0.0.1:1", sensors="panorama", replan_steps=2,
                          send=["rgb_pano_00", "depth_pano_11", "pose", "instruction", "oracle_answer"])
    assert config.send[0] == "rgb_pano_00" and config.replan_steps == 2


def test_resize_nearest():
    image = np.arange(16, dtype=np.uint8).reshape(4, 4)
    assert resize_nearest(image, (2, 2)).tolist() == [[0, 2], [8, 10]]
    assert resize_nearest(np.zeros((4, 6, 3)), (8, 3)).shape == (8, 3, 3)


class Counting(Agent):
    def __init__(self) -> None:
        self.resets: list[str] = []

    def reset(self, episode) -> None:
        self.resets.append(episode.episode_id)

    def act(self, observation):
        return 1


def test_a_served_agent_is_reset_once_per_episode_with_or_without_control_frames():
    bare = Counting()  # an openpi client: no control frames, no step
    PolicySession(bare).handle({"instruction": "go"})
    assert bare.resets == [""]
    agent = Counting()
    session = PolicySession(agent)
    assert session.metadata()["action_space"] == "discrete"
    assert session.handle({"__ctrl__": "episode_start", "episode_id": "a"}) == {"__ctrl__": "ok", "episode_id": "a"}
    assert session.handle({"episode_id": "a", "step": 0}) == {"action": 1, "episode_id": "a", "step": 0}
    session.handle({"episode_id": "a", "step": 1})
    session.handle({"__ctrl__": "episode_end", "episode_id": "a"})
    session.handle({"episode_id": "a", "step": 0})  # the same episode again, by a client without them
    session.handle({"episode_id": "a", "step": 1})
    assert agent.resets == ["a", "a"]
    with pytest.raises(RemotePolicyError, match="unknown control frame 'pause'"):
        session.handle({"__ctrl__": "pause"})


def test_the_metadata_read_before_a_run_makes_reconnects_further_attempts(monkeypatch):
    pytest.importorskip("websockets")
    import websockets.sync.client

    from vlnverse.agents.remote.client import RemoteAgent
    from vlnverse.agents.remote.protocol import RemoteUnreachable

    tries = []

    def refuse(*args, **kwargs):
        tries.append(args[0])
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(websockets.sync.client, "connect", refuse)
    with pytest.raises(RemoteUnreachable, match="cannot connect to the policy server ws://127.0.0.1:1"):
        RemoteAgent(RemoteConfig(url="ws://127.0.0.1:1", reconnects=2, reconnect_delay_s=0))
    assert len(tries) == 3
