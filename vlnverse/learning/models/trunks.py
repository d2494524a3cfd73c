"""The convolutional trunks a policy's visual encoders are built on, by name.

A trunk maps frames ``(N, C, H, W)`` to a feature map ``(N, C', h, w)``. A model config
names its trunks (``rgb_encoder`` / ``depth_encoder``) from this registry, so a checkpoint
that names a trunk never makes us import anything: a name that is not registered is
refused. Code of your own adds a trunk with :func:`register_trunk` before building or
loading a model that uses it.

Built in:

- ``cnn``: three stride-2 convolutions trained from scratch (the default);
- ``waypoints``: the depth trunk of the waypoint predictor (``vlnverse train waypoints``),
  whose weights a waypoint predictor checkpoint gives (:func:`waypoint_trunk_weights`): it
  learned from depth where the navigable places around the agent are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vlnverse.errors import ConfigError
from vlnverse.learning.torch_support import require_torch

torch = require_torch()
nn = torch.nn

#: A trunk factory: ``(model config, input channels) -> nn.Module``.
TrunkFactory = Callable[[Any, int], Any]


def small_cnn(in_channels: int, channels: tuple[int, int, int]) -> Any:
    """Three stride-2 convolutions: (N, C, H, W) → (N, channels[-1], H/8, W/8)."""
    a, b, c = channels
    return nn.Sequential(
        nn.Conv2d(in_channels, a, 5, stride=2, padding=2), nn.ReLU(inplace=True),
        nn.Conv2d(a, b, 3, stride=2, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(b, c, 3, stride=2, padding=1), nn.ReLU(inplace=True),
    )


def waypoint_trunk(config: Any, in_channels: int) -> Any:
    """The waypoint predictor's per-view depth CNN (its default size) on our normalized depth.

    Our depth frames and the predictor's input share a scale (clipped at 10 m, divided by
    10), so the frame is only pooled to the predictor's input side before its layers.
    """
    from vlnverse.agents.waypoints.learned.net import WaypointNetConfig

    if in_channels != 1:
        raise ConfigError("the 'waypoints' trunk reads depth (one channel); use it as depth_encoder only")
    net = WaypointNetConfig()
    layers: list[Any] = []
    previous = 1
    for width in net.channels:
        layers += [nn.Conv2d(previous, width, 3, stride=2, padding=1), nn.GroupNorm(4, width), nn.ReLU()]
        previous = width
    return nn.Sequential(nn.AdaptiveAvgPool2d(net.input_size), nn.Sequential(*layers))


TRUNKS: dict[str, TrunkFactory] = {
    "cnn": lambda config, in_channels: small_cnn(in_channels, config.channels),
    "waypoints": waypoint_trunk,
}
BUILT_IN = frozenset(TRUNKS)


def register_trunk(name: str, factory: TrunkFactory) -> None:
    """Make ``name`` a trunk a model config (and so a checkpoint) may name.

    ``factory(config, in_channels)`` returns the module (e.g. a torchvision ResNet without
    its pooling and classifier). Registering a built-in name again is refused.
    """
    if not name or not isinstance(name, str):
        raise ConfigError(f"a trunk name must be a non-empty string, got {name!r}")
    if name in BUILT_IN:
        raise ConfigError(f"trunk {name!r} is built in")
    TRUNKS[name] = factory


def build_trunk(name: str, config: Any, in_channels: int) -> Any:
    """The trunk registered as ``name``."""
    if name not in TRUNKS:
        raise ConfigError(f"unknown encoder trunk {name!r}; registered: {', '.join(sorted(TRUNKS))} "
                          "(vlnverse.learning.models.trunks.register_trunk adds one)")
    return TRUNKS[name](config, in_channels)


def waypoint_trunk_weights(state: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``depth_encoder.trunk.*`` weights in a waypoint predictor checkpoint's contents."""
    from vlnverse.agents.waypoints.learned.net import WaypointNetConfig
    from vlnverse.config import config_from_mapping

    net = config_from_mapping(WaypointNetConfig, state.get("net_config", {}), where=where)
    if net.input_size != WaypointNetConfig().input_size or net.channels != WaypointNetConfig().channels:
        raise ConfigError(f"{where}: a waypoint predictor of input {net.input_size} px and channels "
                          f"{list(net.channels)}; the 'waypoints' trunk takes the default size "
                          f"({WaypointNetConfig().input_size} px, {list(WaypointNetConfig().channels)})")
    convolutions = 3 * len(net.channels)  # conv, norm, ReLU per layer; then the view token's layers
    weights = {}
    for key, value in state["model"].items():
        layer, _, parameter = key.removeprefix("encoder.").partition(".")
        if key.startswith("encoder.") and int(layer) < convolutions:
            weights[f"depth_encoder.trunk.1.{layer}.{parameter}"] = value
    return weights
