"""The ``remote`` agent: a policy served elsewhere, reached over the openpi websocket protocol.

``--agent remote --agent-config remote.yaml`` (or ``--agent ws://host:port``) connects to a
policy server; it sends an observation as one msgpack-numpy frame and reads one action, or a
chunk of future actions executed ``replan_steps`` at a time, from the reply
(``docs/remote-policy.md`` gives the schema). Every failure (the server down, a closed
connection, a late reply, a frame that is not msgpack, an action outside the declared space,
an oversized frame, NaN, a frame that answers nothing we asked) raises
:class:`RemotePolicyError` with one line saying why, which the harness records as the
episode's ``error``, and drops the connection: the next episode starts on a fresh one.
Every wait is capped by the episode's time left (:mod:`vlnverse.deadline`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse import deadline
from vlnverse.agents.remote import protocol
from vlnverse.agents.remote.actions import check_action, reply_actions
from vlnverse.agents.remote.protocol import (
    RemoteDesync,
    RemotePolicyError,
    RemoteTimeout,
    RemoteUnreachable,
)
from vlnverse.deadline import EpisodeTimeout
from vlnverse.errors import ConfigError, DependencyNotInstalled
from vlnverse.eval.agent import Agent, EpisodeInfo
from vlnverse.redact import redact

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteConfig:
    """Settings of the ``remote`` agent (``--agent-config``).

    Attributes:
        url: The policy server, ``ws://host:port`` (or ``wss://``).
        api_key_env: Environment variable holding an API key, sent as
            ``Authorization: Api-Key <key>`` and masked in everything we write.
        action_space: ``discrete``, ``velocity`` or ``waypoint``. When set, the server is first
            reached at the first episode (so a server that is down fails episodes, not the
            run) and its metadata must agree; when empty it is read from the metadata now.
        sensors: The sensors rendered for the server (names, or ``panorama``).
        send: Observation keys sent each step (empty: all of them); ``episode_id`` and
            ``step`` are always sent. A key the env never makes with these ``sensors`` is
            refused (with ``panorama`` the views are ``rgb_pano_00`` … ``depth_pano_11``).
        replan_steps: The most actions of a chunk (a reply's ``actions``) executed before
            asking again (None: the whole chunk); a reset or the episode's end drops the rest.
        step_timeout_s: Deadline of one reply.
        connect_timeout_s: Deadline of connecting and reading the metadata.
        reconnects: Further connection attempts after a failed one (at an episode's start).
        reconnect_delay_s: Wait before the first further attempt (doubled after each).
        max_frame_mb: Largest frame accepted from the server, in MiB.
    """

    url: str = ""
    api_key_env: str | None = None
    action_space: str | None = None
    sensors: Any = ("rgb", "depth")
    send: tuple[str, ...] = ()
    replan_steps: int | None = None
    step_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    reconnects: int = 2
    reconnect_delay_s: float = 0.5
    max_frame_mb: float = 16.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("ws://", "wss://")):
            raise ConfigError(f"remote.url must start with ws:// or wss://, got {redact(self.url)!r}")
        if self.action_space not in (None, *protocol.ACTION_SPACES):
            raise ConfigError(f"remote.action_space must be one of {', '.join(protocol.ACTION_SPACES)}, "
                              f"got {self.action_space!r}")
        for name in ("step_timeout_s", "connect_timeout_s", "max_frame_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ConfigError(f"remote.{name} must be a positive number, got {value!r}")
        if not isinstance(self.reconnects, int) or self.reconnects < 0:
            raise ConfigError(f"remote.reconnects must be a non-negative integer, got {self.reconnects!r}")
        if not isinstance(self.reconnect_delay_s, (int, float)) or self.reconnect_delay_s < 0:
            raise ConfigError(f"remote.reconnect_delay_s must be >= 0, got {self.reconnect_delay_s!r}")
        if self.replan_steps is not None and (isinstance(self.replan_steps, bool)
                                              or not isinstance(self.replan_steps, int) or self.replan_steps < 1):
            raise ConfigError(f"remote.replan_steps must be a positive integer, got {self.replan_steps!r}")
        object.__setattr__(self, "send", tuple(self.send))
        _check_send(self.send, self.sensors)


TASK_KEYS = ("pose", "instruction", "bump", "reference_image", "oracle_answer", "question", "options",
             "pointgoal_with_gps_compass")
"""Observation keys the env adds to its sensors' (some only for the task kinds that own them)."""


def _check_send(send: tuple[str, ...], sensors: Any) -> None:
    """Refuse a ``send`` key the env never makes with ``sensors`` (a misspelling, or ``rgb``
    with the panorama rig, whose views are ``rgb_pano_NN``)."""
    from vlnverse.sim.rig import SensorRig

    known = [*SensorRig.from_spec(sensors).names(), *TASK_KEYS]
    unknown = [key for key in send if key not in known]
    if unknown:
        raise ConfigError(f"remote.send names {', '.join(map(repr, unknown))}, which the env does not observe with "
                          f"sensors {sensors!r}; known keys: {', '.join(known)}")


def parse_metadata(metadata: Mapping[str, Any]) -> tuple[str, tuple[int, int] | None]:
    """The action space and the image size (height, width) a server's metadata declares."""
    space = metadata.get("action_space")
    if space not in protocol.ACTION_SPACES:
        raise RemotePolicyError(f"the server's metadata declares action_space {space!r}; "
                                f"expected one of {', '.join(protocol.ACTION_SPACES)}")
    size = metadata.get("image_size")
    if size is None:
        return space, None
    try:
        height, width = (int(v) for v in np.asarray(size).reshape(-1))
    except (TypeError, ValueError):
        raise RemotePolicyError(f"the server's image_size must be [height, width], got {size!r}") from None
    if not (0 < height <= 4096 and 0 < width <= 4096):
        raise RemotePolicyError(f"the server's image_size {size!r} is out of range (1..4096)")
    return space, (height, width)


def _resize(value: Any, size: tuple[int, int] | None) -> Any:
    """Camera images (H×W, H×W×C, or views×H×W×C) at the server's ``size``."""
    if size is None or not isinstance(value, np.ndarray) or value.ndim not in (2, 3, 4):
        return value
    if value.ndim == 4:
        return np.stack([protocol.resize_nearest(view, size) for view in value])
    return protocol.resize_nearest(value, size)


class RemoteAgent(Agent):
    """An agent whose decisions come from a policy server over the openpi websocket protocol."""

    config_class = RemoteConfig

    def __init__(self, config: RemoteConfig) -> None:
        try:
            import websockets.sync.client  # noqa: F401
        except ImportError as exc:
            raise DependencyNotInstalled("websockets", "remote", "remote policies") from exc
        self.config = config
        self.sensors = config.sensors
        self._headers = self._auth_headers()
        self._max_bytes = int(config.max_frame_mb * 1024 * 1024)
        self._conn: Any = None
        self._owed = False  # a request went out and its reply was not read: the connection is out of step
        self._ctrl: bool | None = None  # whether the server answers control frames
        self._episode: EpisodeInfo | None = None
        self._step = 0
        self._chunk: list[Any] = []  # the actions of the last reply not executed yet
        self._inference: list[int] = []  # for each executed action, the request its reply answered
        self._requests = 0
        self._image_size: tuple[int, int] | None = None
        self.server_agent: str | None = None  # the metadata's ``agent``: the run's label in tables
        self.action_space = config.action_space
        if self.action_space is None:
            self._connect()

    def _auth_headers(self) -> dict[str, str] | None:
        name = self.config.api_key_env
        if not name:
            return None
        return {"Authorization": f"Api-Key {protocol.api_key(name, 'remote.api_key_env')}"}

    @property
    def where(self) -> str:
        return redact(self.config.url)

    def _connect(self) -> None:
        """A connection and the server's metadata, after up to ``reconnects`` further attempts."""
        from websockets.exceptions import InvalidHandshake, WebSocketException
        from websockets.sync.client import connect

        delay = self.config.reconnect_delay_s
        attempts = 1 + self.config.reconnects
        for attempt in range(attempts):
            try:
                conn = connect(self.config.url, additional_headers=self._headers, compression=None,
                               proxy=None, max_size=self._max_bytes,
                               open_timeout=deadline.bound(self.config.connect_timeout_s), close_timeout=1.0)
                conn.__enter__()  # a connection we close ourselves (websockets' non-legacy form)
            except (OSError, TimeoutError, InvalidHandshake, WebSocketException) as exc:
                problem = f"cannot connect to the policy server {self.where}: {type(exc).__name__}: {exc}"
                deadline.check()
                if attempt + 1 == attempts:
                    raise RemoteUnreachable(problem) from None
                logger.info("%s; retrying in %.1f s", problem, delay)
                time.sleep(deadline.bound(delay))
                delay *= 2
                continue
            self._conn, self._owed = conn, False
            metadata = self._receive(self.config.connect_timeout_s, "its metadata")
            try:
                space, self._image_size = parse_metadata(metadata)
                if self.action_space not in (None, space):
                    raise RemotePolicyError(f"the server at {self.where} declares action_space {space!r}, "
                                            f"the config {self.action_space!r}")
            except RemotePolicyError:
                self._drop()
                raise
            self.action_space = space
            agent = metadata.get("agent")
            self.server_agent = redact(" ".join(agent.split())[:60]) if isinstance(agent, str) and agent.strip() \
                else None
            return

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def _receive(self, timeout: float, what: str) -> dict[str, Any]:
        """The next frame as a map, waiting ``timeout`` or the episode's time left if less;
        on any failure the connection is dropped."""
        from websockets.exceptions import ConnectionClosed

        limit = deadline.bound(timeout)
        try:
            frame = self._conn.recv(timeout=limit)
            return protocol.unpack(frame, self._max_bytes)
        except TimeoutError:
            self._drop()
            if limit < timeout:
                raise EpisodeTimeout from None
            raise RemoteTimeout(f"the policy server {self.where} did not send {what} within {timeout:g} s") from None
        except ConnectionClosed as exc:
            self._conn = None
            raise RemotePolicyError(f"the policy server {self.where} closed the connection "
                                    f"before sending {what}: {_closed(exc)}") from None
        except RemotePolicyError:
            self._drop()
            raise

    def _check_quiet(self) -> None:
        """Refuse a frame that arrived unasked (a server that answered twice): out of step."""
        from websockets.exceptions import ConnectionClosed

        try:
            frame = self._conn.recv(timeout=0)
        except TimeoutError:
            return
        except ConnectionClosed as exc:
            self._conn = None
            raise RemotePolicyError(f"the policy server {self.where} closed the connection: {_closed(exc)}") from None
        self._drop()
        sent = f"an error text: {frame.strip()[:200]}" if isinstance(frame, str) else f"{len(frame)} bytes"
        raise RemoteDesync(f"the policy server {self.where} sent a frame nobody asked for ({sent}), so its replies "
                           "are out of step with our requests; the connection is dropped")

    def _request(self, message: Mapping[str, Any], what: str) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        if self._conn is None:
            raise RemotePolicyError(f"the connection to the policy server {self.where} was lost mid-episode")
        self._check_quiet()
        try:
            self._owed = True
            self._conn.send(protocol.pack(message))
        except ConnectionClosed as exc:
            self._conn = None
            raise RemotePolicyError(f"the policy server {self.where} closed the connection: {_closed(exc)}") from None
        reply = self._receive(self.config.step_timeout_s, what)
        self._owed = False
        return reply

    def _control(self, message: Mapping[str, Any], what: str) -> bool:
        """Send a control frame; whether it was answered ``ok`` (if not, the connection is dropped)."""
        reply = self._request(message, what)
        if reply.get(protocol.CTRL) == protocol.CTRL_OK \
                and reply.get("episode_id", message["episode_id"]) == message["episode_id"]:
            return True
        self._drop()
        return False

    def reset(self, episode: EpisodeInfo) -> None:
        if self._owed:  # the last episode ended while a reply was owed (its time ran out)
            self._drop()
        if self._conn is not None and self._episode is not None and self._ctrl:
            self._end_episode()
        self._episode, self._step, self._chunk, self._inference, self._requests = episode, 0, [], [], 0
        if self._conn is None:
            self._connect()
        if episode.action_space_name != self.action_space:
            raise RemotePolicyError(f"the server speaks {self.action_space!r} actions, the env {episode.action_space_name!r}")
        if self._ctrl is not False:
            self._start_episode(episode)

    def _start_episode(self, episode: EpisodeInfo) -> None:
        """Announce the episode. A server that does not answer the first one ``ok`` gets no
        more control frames; one that took them and now answers otherwise is out of step, so
        the announcement is repeated once on a fresh connection."""
        start = {protocol.CTRL: protocol.EPISODE_START, "episode_id": episode.episode_id, "task": episode.task,
                 "split": episode.split, "scene_id": episode.scene_id, "physics": episode.physics,
                 "instruction": episode.instruction, "action_space": episode.action_space_name,
                 "max_steps": episode.max_steps, "seed": episode.seed}
        for _ in range(2):
            try:
                answered = self._control(start, "an answer to episode_start")
            except (RemoteTimeout, RemoteDesync):
                raise
            except RemotePolicyError as exc:
                if self._ctrl:
                    raise
                logger.info("%s does not take control frames (%s); episodes start at step 0", self.where, exc)
                answered = False
            if answered:
                self._ctrl = True
                return
            self._drop()
            if not self._ctrl:
                logger.info("%s answered episode_start with no ok; episodes start at step 0", self.where)
                self._ctrl = False
                self._connect()
                return
            logger.warning("%s answered episode_start with no ok: out of step; reconnecting", self.where)
            self._connect()
        raise RemoteDesync(f"the policy server {self.where} answered episode_start with no ok twice")

    def _end_episode(self) -> None:
        assert self._episode is not None
        try:
            if not self._control({protocol.CTRL: protocol.EPISODE_END, "episode_id": self._episode.episode_id},
                                 "an answer to episode_end"):
                logger.warning("%s answered episode_end with no ok: out of step; the next episode gets a fresh "
                               "connection", self.where)
        except RemotePolicyError as exc:
            logger.info("episode_end: %s", exc)
            self._drop()

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self._episode is None:
            raise RemotePolicyError("act() before reset()")
        if not self._chunk:
            self._chunk = self._infer(observation)[:self.config.replan_steps]
        try:
            action = check_action(self._chunk.pop(0), self._episode.action_space)
        except RemotePolicyError:
            self._drop()
            raise
        self._inference.append(self._requests - 1)
        self._step += 1
        return action

    def _infer(self, observation: Mapping[str, Any]) -> list[Any]:
        """The actions the server answers to ``observation`` (a reply error drops the connection)."""
        assert self._episode is not None
        keys = self.config.send or tuple(observation)
        message: dict[str, Any] = {key: _resize(observation[key], self._image_size)
                                   for key in keys if key in observation}
        message.update(episode_id=self._episode.episode_id, step=self._step)
        reply = self._request(message, f"an action for step {self._step}")
        self._requests += 1
        try:
            _check_echo(reply, message)
            return reply_actions(reply)
        except RemotePolicyError:
            self._drop()
            raise

    def trace(self) -> Mapping[str, Any] | None:
        """The requests sent this episode and, per executed action, the request it answered."""
        return {"requests": self._requests, "inference": list(self._inference)}

    def close(self) -> None:
        if self._owed:
            self._drop()
        if self._conn is not None and self._episode is not None and self._ctrl:
            self._end_episode()
        if self._conn is not None:
            self._drop()


def _check_echo(reply: Mapping[str, Any], message: Mapping[str, Any]) -> None:
    """Refuse a reply to an observation that is a control answer, or that echoes another
    observation's ``step`` or ``episode_id`` (the echo is optional)."""
    if protocol.CTRL in reply:
        raise RemoteDesync(f"the reply to the observation of step {message['step']} is a control answer "
                           f"({reply[protocol.CTRL]!r:.40}): the server's replies are out of step")
    for key in ("step", "episode_id"):
        if key in reply and reply[key] != message[key]:
            raise RemoteDesync(f"the reply to the observation of step {message['step']} echoes {key} "
                               f"{reply[key]!r:.60}: the server's replies are out of step")


def _closed(exc: Any) -> str:
    from websockets.exceptions import PayloadTooBig

    sent = getattr(exc, "sent", None)
    if isinstance(exc.__cause__, PayloadTooBig) or (sent is not None and sent.code == 1009):
        return f"its frame was over our size limit ({exc.__cause__ or sent.reason[:200]})"
    frame = getattr(exc, "rcvd", None) or sent
    if frame is None:
        return "no close frame"
    return f"code {frame.code}" + (f" ({frame.reason[:200]})" if frame.reason else "")
