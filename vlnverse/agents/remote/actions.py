"""What a policy server's reply holds: one action (``action``) or a chunk of future ones
(``actions``, as openpi policies answer), each checked against the declared space when it
is executed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vlnverse.agents.remote.protocol import RemotePolicyError


def reply_actions(reply: Mapping[str, Any]) -> list[Any]:
    """The actions of a reply frame, in order: one for ``action``, H for ``actions`` (an
    array or list of H actions); not yet checked against the space (:func:`check_action`)."""
    if ("action" in reply) == ("actions" in reply):
        has = "both 'action' and 'actions'" if "action" in reply else "no 'action' or 'actions'"
        raise RemotePolicyError(f"the reply has {has} (keys: {sorted(map(str, reply))[:8]})")
    if "action" in reply:
        return [reply["action"]]
    chunk = reply["actions"]
    if isinstance(chunk, np.ndarray) and chunk.ndim >= 1:
        chunk = list(chunk)
    if not isinstance(chunk, list) or not chunk:
        raise RemotePolicyError(f"the reply's 'actions' must be a non-empty list or array of actions, "
                                f"got {chunk!r:.80}")
    return chunk


def _numbers(value: Any) -> np.ndarray:
    """``value`` as float64, refusing what only looks like a number (``None``, ``True``, ``'1'``)."""
    array = np.asarray(value) if not isinstance(value, (str, bytes)) and value is not None else None
    if array is None or array.dtype.kind not in "iuf":
        raise RemotePolicyError(f"the action {value!r:.80} is not a number or an array of numbers")
    return array.astype(np.float64)


def check_action(value: Any, space: Any) -> Any:
    """One action, checked against the env's gymnasium ``space`` (an int for ``Discrete``,
    float32 for ``Box``)."""
    numbers = _numbers(value)
    if not np.all(np.isfinite(numbers)):
        raise RemotePolicyError(f"the action {numbers.tolist()!r:.80} is not finite")
    flat = numbers.reshape(-1)
    if hasattr(space, "n"):
        if flat.size != 1 or flat[0] != int(flat[0]) or not space.contains(int(flat[0])):
            raise RemotePolicyError(f"the action {numbers.tolist()!r:.80} is outside the declared space "
                                    f"(an integer in 0..{space.n - 1})")
        return int(flat[0])
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    if flat.shape != low.shape or np.any(flat < low - 1e-6) or np.any(flat > high + 1e-6):
        raise RemotePolicyError(f"the action {flat.tolist()!r:.80} is outside the declared space "
                                f"(low {low.round(3).tolist()}, high {high.round(3).tolist()})")
    return flat.astype(np.float32)
