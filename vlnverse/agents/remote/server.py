"""``vlnverse serve-policy``: any agent the harness can load, served over the openpi websocket
policy protocol (one agent per connection, so each running episode has its own state)."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from vlnverse.agents.remote import protocol
from vlnverse.agents.remote.protocol import RemotePolicyError
from vlnverse.errors import DependencyNotInstalled
from vlnverse.eval.agent import Agent, EpisodeInfo

logger = logging.getLogger(__name__)


def _action_space(agent: Agent) -> Any:
    from vlnverse.sim.actions import make_action_space

    return make_action_space(agent.action_space)


class PolicySession:
    """One connection's agent: answers control frames and observations with reply maps."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.spec = _action_space(agent)
        self._announced = False  # an episode_start came and no observation since
        self._reset_once = False

    def metadata(self) -> dict[str, Any]:
        return {"action_space": self.spec.name, "server": "vlnverse serve-policy",
                "agent": type(self.agent).__name__}

    def _reset(self, frame: Mapping[str, Any]) -> None:
        from vlnverse.sim.agent import AgentSpec

        self._reset_once = True
        self.agent.reset(EpisodeInfo(
            episode_id=str(frame.get("episode_id", "")), task=str(frame.get("task", "")), split=str(frame.get("split", "")),
            physics=str(frame.get("physics", "")), scene_id=str(frame.get("scene_id", "")),
            instruction=str(frame.get("instruction", "")), action_space=self.spec.gym_space(AgentSpec()),
            action_space_name=self.spec.name, action_spec=self.spec,
            max_steps=int(frame.get("max_steps") or self.spec.default_max_steps), seed=int(frame.get("seed") or 0)))

    def handle(self, frame: Mapping[str, Any]) -> dict[str, Any]:
        """The reply to one frame, echoing its ``episode_id`` (and an observation's ``step``)
        so that a client can tell which request it answers."""
        echo = {key: frame[key] for key in ("episode_id", "step") if key in frame}
        control = frame.get(protocol.CTRL)
        if control == protocol.EPISODE_START:
            self._reset(frame)
            self._announced = True
            return {protocol.CTRL: protocol.CTRL_OK, **echo}
        if control == protocol.EPISODE_END:
            return {protocol.CTRL: protocol.CTRL_OK, **echo}
        if control is not None:
            raise RemotePolicyError(f"unknown control frame {control!r}")
        # A client without control frames starts an episode at step 0 (or, sending no step, once).
        if not self._announced and (frame.get("step") == 0 or not self._reset_once):
            self._reset(frame)
        self._announced = False
        action = self.agent.act(frame)
        if isinstance(action, (int, np.integer)):
            return {"action": int(action), **echo}
        try:
            return {"action": np.asarray(action, dtype=np.float32), **echo}
        except (TypeError, ValueError):
            raise RemotePolicyError(f"the agent's action {action!r:.80} cannot travel as an array") from None


def _check_key(api_key_env: str | None) -> Callable[..., Any] | None:
    """A handshake hook that refuses connections without ``Authorization: Api-Key <key>``."""
    if not api_key_env:
        return None
    expected = f"Api-Key {protocol.api_key(api_key_env, '--api-key-env')}".encode()

    def check(connection: Any, request: Any) -> Any:
        given = (request.headers.get("Authorization") or "").encode()
        if not hmac.compare_digest(given, expected):
            return connection.respond(401, "missing or wrong API key\n")
        return None

    return check


def serve_policy(make_agent: Callable[[], Agent], *, host: str = "127.0.0.1", port: int = 8000,
                 api_key_env: str | None = None, max_frame_mb: float = 16.0,
                 on_ready: Callable[[str], None] | None = None) -> None:
    """Serve agents built by ``make_agent`` (one per connection) until interrupted.

    ``on_ready(url)`` is called once the socket listens (``port`` 0 picks a free one).
    """
    try:
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.server import serve
    except ImportError as exc:
        raise DependencyNotInstalled("websockets", "remote", "serving policies") from exc
    max_bytes = int(max_frame_mb * 1024 * 1024)

    def handler(ws: Any) -> None:
        agent = make_agent()
        try:
            session = PolicySession(agent)
            ws.send(protocol.pack(session.metadata()))
            for frame in ws:
                try:
                    reply = protocol.pack(session.handle(protocol.unpack(frame, max_bytes)))
                except Exception as exc:  # noqa: BLE001 - the client gets the error as a text frame
                    logger.warning("policy error: %s: %s", type(exc).__name__, exc)
                    ws.send(f"{type(exc).__name__}: {exc}")
                    ws.close(1011, "policy error")
                    return
                ws.send(reply)
        except ConnectionClosed:
            pass
        finally:
            agent.close()

    with serve(handler, host, port, compression=None, max_size=max_bytes,
               process_request=_check_key(api_key_env)) as server:
        bound = server.socket.getsockname()
        if on_ready is not None:
            on_ready(f"ws://{bound[0]}:{bound[1]}")
        server.serve_forever()
