"""The sensor rig: named sensors that can be attached and detached at run time."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gymnasium import spaces

from vlnverse.errors import ConfigError
from vlnverse.sim.sensors import SENSOR_TYPES, CameraSpec, SensorSpec, make_sensor

RESERVED_NAMES = frozenset({"instruction"})
PANORAMA = "panorama"
"""The rig name of the paper's online rig (C.2.1): 12 RGB + 12 depth views at 30° yaw
steps, 224×224, HFOV 90° (views ``rgb_pano_00..11``, ``depth_pano_00..11``)."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SensorRig:
    """An ordered set of named sensors.

    The rig is mutable (``attach``/``detach``) while its sensor specs are frozen; its
    ``version`` changes on every change so users of the rig can refresh caches.
    """

    def __init__(self, sensors: Mapping[str, SensorSpec] | None = None) -> None:
        self._sensors: dict[str, SensorSpec] = {}
        self.version = 0
        for name, spec in (sensors or {}).items():
            self.attach(name, spec)

    @classmethod
    def from_spec(cls, spec: Any) -> SensorRig:
        """Build a rig from a rig, names/kinds, or a mapping of name → spec.

        Accepted forms: ``("rgb", "depth")`` (each name is also the kind), a mapping
        ``{"front": RGBSensor(...)}`` or ``{"front": {"kind": "rgb", "width": 128}}``, or
        the rig name :data:`PANORAMA` (``"panorama"``: the paper's 12 × 30° rig).

        Raises:
            ConfigError: Unknown sensor kind or parameter, or an invalid value.
        """
        if isinstance(spec, SensorRig):
            return cls(dict(spec.items()))
        if isinstance(spec, str) and spec.strip() == PANORAMA:
            return cls.panoramic(kinds=("rgb", "depth"))
        if isinstance(spec, str):
            spec = [s.strip() for s in spec.split(",") if s.strip()]
        rig = cls()
        if isinstance(spec, Mapping):
            for name, value in spec.items():
                if isinstance(value, SensorSpec):
                    rig.attach(name, value)
                elif isinstance(value, Mapping):
                    params = dict(value)
                    kind = params.pop("kind", name)
                    rig.attach(name, make_sensor(kind, params))
                else:
                    raise ConfigError(f"sensor {name!r}: expected a sensor spec or a mapping, got {value!r}")
            return rig
        if isinstance(spec, Iterable):
            for item in spec:
                if isinstance(item, SensorSpec):
                    rig.attach(item.kind, item)
                elif isinstance(item, str):
                    rig.attach(item, make_sensor(item))
                else:
                    raise ConfigError(f"sensors: expected names or sensor specs, got {item!r}")
            return rig
        raise ConfigError(f"sensors: cannot build a rig from {spec!r}")

    def attach(self, name: str, spec: SensorSpec) -> None:
        """Add (or replace) the sensor ``name``."""
        if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED_NAMES:
            raise ConfigError(f"invalid sensor name {name!r} (an identifier, not {sorted(RESERVED_NAMES)})")
        if not isinstance(spec, SensorSpec) or type(spec).kind not in SENSOR_TYPES:
            raise ConfigError(f"sensor {name!r}: {spec!r} is not a sensor spec")
        self._sensors[name] = spec
        self.version += 1

    def detach(self, name: str) -> SensorSpec:
        """Remove the sensor ``name`` and return its spec."""
        if name not in self._sensors:
            raise ConfigError(f"no sensor {name!r} attached; attached: {', '.join(self._sensors) or '(none)'}")
        self.version += 1
        return self._sensors.pop(name)

    def add_panorama(self, camera: CameraSpec, *, views: int = 12, step_deg: float = 30.0,
                     prefix: str | None = None) -> list[str]:
        """Attach ``views`` copies of ``camera`` turned by ``step_deg`` each (paper C.2.1).

        View ``i`` looks ``i * step_deg`` degrees to the left of the agent's heading
        (counter-clockwise). Returns the names, ``<prefix>_<i:02d>``.
        """
        if not isinstance(views, int) or views < 1:
            raise ConfigError(f"panorama views must be a positive integer, got {views!r}")
        prefix = prefix or f"{camera.kind}_pano"
        names = []
        for i in range(views):
            name = f"{prefix}_{i:02d}"
            self.attach(name, dataclasses.replace(camera, yaw_deg=camera.yaw_deg + i * step_deg))
            names.append(name)
        return names

    @classmethod
    def panoramic(cls, *, kinds: Iterable[str] = ("rgb",), views: int = 12, step_deg: float = 30.0,
                  width: int = 224, height: int = 224, hfov_deg: float = 90.0) -> SensorRig:
        """The paper's online rig: 12 views at 30° yaw steps, 224×224, HFOV 90° (C.2.1)."""
        rig = cls()
        for kind in kinds:
            camera = make_sensor(kind, {"width": width, "height": height, "hfov_deg": hfov_deg})
            if not isinstance(camera, CameraSpec):
                raise ConfigError(f"panorama needs camera sensors, got {kind!r}")
            rig.add_panorama(camera, views=views, step_deg=step_deg)
        return rig

    def observation_space(self, n_instances: int) -> spaces.Dict:
        """The Dict space of every attached sensor's observation."""
        return spaces.Dict({name: spec.observation_space(n_instances) for name, spec in self._sensors.items()})

    def items(self) -> list[tuple[str, SensorSpec]]:
        return list(self._sensors.items())

    def names(self) -> list[str]:
        return list(self._sensors)

    def __getitem__(self, name: str) -> SensorSpec:
        return self._sensors[name]

    def __contains__(self, name: object) -> bool:
        return name in self._sensors

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sensors))

    def __len__(self) -> int:
        return len(self._sensors)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={type(s).__name__}" for n, s in self._sensors.items())
        return f"SensorRig({inner})"
