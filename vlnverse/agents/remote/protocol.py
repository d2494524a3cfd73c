"""Frames of the openpi websocket policy protocol, and their msgpack-numpy codec.

A frame is one binary websocket message holding one msgpack map. NumPy arrays travel as
the maps ``openpi-client`` writes (``{"__ndarray__": true, "data": <bytes>, "dtype": "<u1",
"shape": [h, w, 3]}``; NumPy scalars as ``{"__npgeneric__": true, "data": x, "dtype": ...}``),
so an openpi server and client read ours unchanged. Decoding never unpickles: object, void
and complex dtypes are refused, and an array's bytes must match its dtype and shape.

A text message is the sender's error. A map with the key ``__ctrl__`` is a control frame
(``episode_start``, ``episode_end``); its answer is ``{"__ctrl__": "ok"}``. A reply to an
observation holds ``action`` (one) or ``actions`` (a chunk of the next ones, as openpi
policies answer); any reply may echo the ``episode_id`` (and an observation's ``step``) it
answers, so that a reply out of step is seen as such.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from vlnverse.errors import ConfigError, VLNVerseError
from vlnverse.redact import add_secret


def api_key(env_name: str, option: str) -> str:
    """The API key in environment variable ``env_name``, registered for masking.

    Raises:
        ConfigError: the variable is not set (``option`` names the setting that named it).
    """
    key = os.environ.get(env_name)
    if not key:
        raise ConfigError(f"{option} names {env_name}, which is not set")
    add_secret(key)
    return key

CTRL = "__ctrl__"
CTRL_OK = "ok"
EPISODE_START = "episode_start"
EPISODE_END = "episode_end"
ACTION_SPACES = ("discrete", "velocity", "waypoint")
_REFUSED_KINDS = ("O", "V", "c")


class RemotePolicyError(VLNVerseError):
    """The policy server cannot be reached, broke the protocol or answered an invalid action."""


class RemoteTimeout(RemotePolicyError):
    """The policy server did not answer within its deadline."""


class RemoteUnreachable(RemotePolicyError):
    """The policy server could not be reached (counted as ``health.unreachable``)."""


class RemoteDesync(RemotePolicyError):
    """A frame that answers no request of ours, or answers another one: the connection is out of step."""


def _msgpack() -> Any:
    try:
        import msgpack
    except ImportError as exc:
        from vlnverse.errors import DependencyNotInstalled

        raise DependencyNotInstalled("msgpack", "remote", "remote policies") from exc
    return msgpack


def _encode(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in _REFUSED_KINDS:
        raise RemotePolicyError(f"cannot send an array of dtype {obj.dtype}")
    if isinstance(obj, np.ndarray):
        data = np.ascontiguousarray(obj)
        return {b"__ndarray__": True, b"data": data.tobytes(), b"dtype": data.dtype.str,
                b"shape": list(data.shape)}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"cannot encode {type(obj).__name__}")


def _field(obj: Mapping[Any, Any], name: str) -> Any:
    return obj[name.encode()] if name.encode() in obj else obj[name]


def _decode(obj: dict[Any, Any]) -> Any:
    for marker in (b"__ndarray__", "__ndarray__", b"__npgeneric__", "__npgeneric__"):
        if marker in obj:
            break
    else:
        return obj
    try:
        dtype = np.dtype(_field(obj, "dtype"))
        if dtype.kind in _REFUSED_KINDS:
            raise RemotePolicyError(f"refusing an array of dtype {dtype}")
        if "ndarray" in str(marker):
            shape = tuple(int(s) for s in _field(obj, "shape"))
            data = _field(obj, "data")
            if len(data) != dtype.itemsize * math.prod(shape):
                raise RemotePolicyError(f"array bytes do not match dtype {dtype} and shape {shape}")
            return np.frombuffer(data, dtype=dtype).reshape(shape)
        return dtype.type(_field(obj, "data"))
    except (KeyError, TypeError, ValueError) as exc:
        raise RemotePolicyError(f"malformed array in frame: {exc}") from exc


def pack(message: Mapping[str, Any]) -> bytes:
    """``message`` as one msgpack-numpy frame."""
    return _msgpack().packb(message, default=_encode, use_bin_type=True)


def unpack(frame: bytes | str, max_bytes: int) -> dict[str, Any]:
    """The map of a binary ``frame``.

    Raises:
        RemotePolicyError: a text frame (the peer's error), a frame over ``max_bytes``,
            a frame that is not msgpack, or one that is not a map.
    """
    if isinstance(frame, str):
        raise RemotePolicyError(f"the peer sent an error: {frame.strip()[:500]}")
    if len(frame) > max_bytes:
        raise RemotePolicyError(f"frame of {len(frame)} bytes is over the {max_bytes}-byte limit")
    msgpack = _msgpack()
    try:
        message = msgpack.unpackb(frame, object_hook=_decode, raw=False, strict_map_key=False)
    except RemotePolicyError:
        raise
    except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        reason = str(exc) or f"it starts with bytes {frame[:8].hex(' ')}"
        raise RemotePolicyError(f"frame is not msgpack: {type(exc).__name__}: {reason}") from exc
    if not isinstance(message, dict):
        raise RemotePolicyError(f"frame is a msgpack {type(message).__name__}, not a map")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in message.items()}


def resize_nearest(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` (H×W or H×W×C) resized to ``size`` = (height, width) by nearest neighbour."""
    height, width = size
    if image.shape[:2] == (height, width):
        return image
    rows = (np.arange(height) * image.shape[0] // height).clip(0, image.shape[0] - 1)
    cols = (np.arange(width) * image.shape[1] // width).clip(0, image.shape[1] - 1)
    return image[rows][:, cols]
