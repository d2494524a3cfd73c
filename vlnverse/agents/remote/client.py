"""The ``remote`` agent: a policy served elsewhere, reached over the openpi websocket protocol.

``--agent remote --agent-config remote.yaml`` (or ``--agent ws://host:port``) connects to a
policy server; each step it sends the observation as one msgpack-numpy frame and reads the
action from the reply (``docs/remote-policy.md`` gives the schema). Every failure — the
server down, a closed connection, a late reply, a frame that is not msgpack, an action
outside the declared space, an oversized frame, NaN — raises :class:`RemotePolicyError`
with one line saying why, which the harness records as the episode's ``error``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlnverse.agents.remote import protocol
from vlnverse.agents.remote.protocol import RemotePolicyError, RemoteTimeout
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
            ``step`` are always sent.
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


def parse_action(reply: Mapping[str, Any], space: Any) -> Any:
    """The action of a reply frame, checked against the env's gymnasium ``space``."""
    if "action" not in reply:
        raise RemotePolicyError(f"the reply has no 'action' (keys: {sorted(map(str, reply))[:8]})")
    try:
        value = np.asarray(reply["action"], dtype=np.float64)
    except (TypeError, ValueError):
        raise RemotePolicyError(f"the action {reply['action']!r:.80} is not numeric") from None
    if not np.all(np.isfinite(value)):
        raise RemotePolicyError(f"the action {value.tolist()!r:.80} is not finite")
    if hasattr(space, "n"):
        if value.size != 1 or value.reshape(-1)[0] != int(value.reshape(-1)[0]) \
                or not space.contains(int(value.reshape(-1)[0])):
            raise RemotePolicyError(f"the action {value.tolist()!r:.80} is outside the declared space "
                                    f"(an integer in 0..{space.n - 1})")
        return int(value.reshape(-1)[0])
    value = value.reshape(-1)
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    if value.shape != low.shape or np.any(value < low - 1e-6) or np.any(value > high + 1e-6):
        raise RemotePolicyError(f"the action {value.tolist()!r:.80} is outside the declared space "
                                f"(low {low.round(3).tolist()}, high {high.round(3).tolist()})")
    return value.astype(np.float32)


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
        self._ctrl: bool | None = None  # whether the server answers control frames
        self._episode: EpisodeInfo | None = None
        self._step = 0
        self._image_size: tuple[int, int] | None = None
        self.action_space = config.action_space
        if self.action_space is None:
            self._connect(attempts=1)

    def _auth_headers(self) -> dict[str, str] | None:
        name = self.config.api_key_env
        if not name:
            return None
        return {"Authorization": f"Api-Key {protocol.api_key(name, 'remote.api_key_env')}"}

    @property
    def where(self) -> str:
        return redact(self.config.url)

    def _connect(self, attempts: int) -> None:
        from websockets.exceptions import InvalidHandshake, WebSocketException
        from websockets.sync.client import connect

        delay = self.config.reconnect_delay_s
        for attempt in range(attempts):
            try:
                conn = connect(self.config.url, additional_headers=self._headers, compression=None,
                               proxy=None, max_size=self._max_bytes, open_timeout=self.config.connect_timeout_s,
                               close_timeout=1.0)
                conn.__enter__()  # a connection we close ourselves (websockets' non-legacy form)
            except (OSError, TimeoutError, InvalidHandshake, WebSocketException) as exc:
                problem = f"cannot connect to the policy server {self.where}: {type(exc).__name__}: {exc}"
                if attempt + 1 == attempts:
                    raise RemotePolicyError(problem) from None
                logger.info("%s; retrying in %.1f s", problem, delay)
                time.sleep(delay)
                delay *= 2
                continue
            self._conn = conn
            metadata = self._receive(self.config.connect_timeout_s, "its metadata")
            space, self._image_size = parse_metadata(metadata)
            if self.action_space not in (None, space):
                self._drop()
                raise RemotePolicyError(f"the server at {self.where} declares action_space {space!r}, "
                                        f"the config {self.action_space!r}")
            self.action_space = space
            return

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def _receive(self, timeout: float, what: str) -> dict[str, Any]:
        """The next frame as a map; on any failure the connection is dropped."""
        from websockets.exceptions import ConnectionClosed

        try:
            frame = self._conn.recv(timeout=timeout)
            return protocol.unpack(frame, self._max_bytes)
        except TimeoutError:
            self._drop()
            raise RemoteTimeout(f"the policy server {self.where} sent no {what} within {timeout:g} s") from None
        except ConnectionClosed as exc:
            self._conn = None
            raise RemotePolicyError(f"the policy server {self.where} closed the connection "
                                    f"before sending {what}: {_closed(exc)}") from None
        except RemotePolicyError:
            self._drop()
            raise

    def _send(self, message: Mapping[str, Any]) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self._conn.send(protocol.pack(message))
        except ConnectionClosed as exc:
            self._conn = None
            raise RemotePolicyError(f"the policy server {self.where} closed the connection: {_closed(exc)}") from None

    def _request(self, message: Mapping[str, Any], what: str) -> dict[str, Any]:
        if self._conn is None:
            raise RemotePolicyError(f"the connection to the policy server {self.where} was lost mid-episode")
        self._send(message)
        return self._receive(self.config.step_timeout_s, what)

    def reset(self, episode: EpisodeInfo) -> None:
        if self._conn is not None and self._episode is not None and self._ctrl:
            self._end_episode()
        self._episode, self._step = episode, 0
        if self._conn is None:
            self._connect(attempts=1 + self.config.reconnects)
        if episode.action_space_name != self.action_space:
            raise RemotePolicyError(f"the server speaks {self.action_space!r} actions, the env {episode.action_space_name!r}")
        if self._ctrl is not False:
            self._start_episode(episode)

    def _start_episode(self, episode: EpisodeInfo) -> None:
        """Announce the episode; a server that does not answer ``ok`` gets no more control frames."""
        start = {protocol.CTRL: protocol.EPISODE_START, "episode_id": episode.episode_id, "task": episode.task,
                 "split": episode.split, "scene_id": episode.scene_id, "physics": episode.physics,
                 "instruction": episode.instruction, "action_space": episode.action_space_name,
                 "max_steps": episode.max_steps, "seed": episode.seed}
        try:
            reply = self._request(start, "an answer to episode_start")
        except RemoteTimeout:
            raise
        except RemotePolicyError as exc:
            logger.info("%s does not take control frames (%s); episodes start at step 0", self.where, exc)
            self._ctrl = False
            if self._conn is None:
                self._connect(attempts=1 + self.config.reconnects)
            return
        self._ctrl = reply.get(protocol.CTRL) == protocol.CTRL_OK
        if not self._ctrl:
            logger.info("%s answered episode_start with no ok; episodes start at step 0", self.where)

    def _end_episode(self) -> None:
        assert self._episode is not None
        try:
            self._request({protocol.CTRL: protocol.EPISODE_END, "episode_id": self._episode.episode_id},
                          "an answer to episode_end")
        except RemotePolicyError as exc:
            logger.info("episode_end: %s", exc)

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self._episode is None:
            raise RemotePolicyError("act() before reset()")
        keys = self.config.send or tuple(observation)
        message: dict[str, Any] = {key: _resize(observation[key], self._image_size)
                                   for key in keys if key in observation}
        message.update(episode_id=self._episode.episode_id, step=self._step)
        reply = self._request(message, f"an action for step {self._step}")
        self._step += 1
        return parse_action(reply, self._episode.action_space)

    def close(self) -> None:
        if self._conn is not None and self._episode is not None and self._ctrl:
            self._end_episode()
        if self._conn is not None:
            self._drop()


def _closed(exc: Any) -> str:
    from websockets.exceptions import PayloadTooBig

    sent = getattr(exc, "sent", None)
    if isinstance(exc.__cause__, PayloadTooBig) or (sent is not None and sent.code == 1009):
        return f"its frame was over our size limit ({exc.__cause__ or sent.reason[:200]})"
    frame = getattr(exc, "rcvd", None) or sent
    if frame is None:
        return "no close frame"
    return f"code {frame.code}" + (f" ({frame.reason[:200]})" if frame.reason else "")
