"""Frozen configs of the LLM waypoint agents (the ``--agent-config`` YAML).

A YAML file such as::

    llm: openai:qwen2.5-vl-7b?base_url=http://127.0.0.1:8000/v1&api_key_env=none
    perception: gt
    samples: 1
    max_tokens_per_episode: 200000
    waypoints: {spacing_deg: 30, max_candidates: 8}
    panorama: {views: 12, image_size: 224}

is built strictly (an unknown key is an error naming it) into the agent's config class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vlnverse.errors import ConfigError

PERCEPTION_MODES = ("vlm", "gt")
PROMPT_VARIANTS = ("json", "lines")
WAYPOINT_PREDICTORS = ("learned", "depth")
MAX_CANDIDATES = 26  # ids are the letters A..Z


def _positive(owner: str, **values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value <= 0:
            raise ConfigError(f"{owner}.{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class WaypointConfig:
    """Candidate waypoints from the agent's own panoramic depth.

    Attributes:
        spacing_deg: Angle between candidate headings (360 / spacing headings; at most 26).
        min_distance: Shortest candidate (m); a heading with less free space gives none.
        max_distance: Longest candidate (m).
        safety_margin: Kept between the body and the first obstacle along a heading (m).
        body_radius: The robot's radius (m), known to the robot itself.
        body_height: The robot's height (m): obstacles above it are ignored.
        step_height: Obstacles lower than this are driven over (m).
        merge_distance: Candidates whose end points are closer than this are merged (m).
        max_candidates: Most candidates offered per step.
    """

    spacing_deg: float = 30.0
    min_distance: float = 0.4
    max_distance: float = 3.0
    safety_margin: float = 0.25
    body_radius: float = 0.30
    body_height: float = 1.50
    step_height: float = 0.10
    merge_distance: float = 0.6
    max_candidates: int = 8

    def __post_init__(self) -> None:
        _positive("waypoints", spacing_deg=self.spacing_deg, min_distance=self.min_distance,
                  max_distance=self.max_distance, body_radius=self.body_radius,
                  body_height=self.body_height, merge_distance=self.merge_distance)
        if self.min_distance > self.max_distance:
            raise ConfigError("waypoints.min_distance must not exceed max_distance")
        if self.safety_margin < 0 or not 0 <= self.step_height < self.body_height:
            raise ConfigError("waypoints: safety_margin must be >= 0 and 0 <= step_height < body_height")
        if round(360.0 / self.spacing_deg) > MAX_CANDIDATES:
            raise ConfigError(f"waypoints.spacing_deg gives more than {MAX_CANDIDATES} headings")
        if not isinstance(self.max_candidates, int) or not 1 <= self.max_candidates <= MAX_CANDIDATES:
            raise ConfigError(f"waypoints.max_candidates must be an integer in [1, {MAX_CANDIDATES}]")


@dataclass(frozen=True)
class PanoramaConfig:
    """The agent's panoramic camera rig (views turn counter-clockwise from the heading).

    Attributes:
        views: Number of views, evenly spaced over 360 degrees.
        image_size: Side of the square RGB / semantic / depth images (pixels).
        hfov_deg: Horizontal field of view of each view.
        camera_height: Mount height above the floor (m).
        max_depth: Depth readings are clipped here (m).
        depth_stride: Every ``depth_stride``-th pixel (both axes) is used for geometry.
    """

    views: int = 12
    image_size: int = 224
    hfov_deg: float = 90.0
    camera_height: float = 1.25
    max_depth: float = 10.0
    depth_stride: int = 4

    def __post_init__(self) -> None:
        _positive("panorama", hfov_deg=self.hfov_deg, camera_height=self.camera_height,
                  max_depth=self.max_depth)
        for name in ("views", "image_size", "depth_stride"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"panorama.{name} must be a positive integer, got {value!r}")
        if self.views * self.hfov_deg < 360.0:
            raise ConfigError("panorama: views x hfov_deg must cover 360 degrees")

    @property
    def step_deg(self) -> float:
        return 360.0 / self.views


@dataclass(frozen=True)
class LLMAgentConfig:
    """Settings shared by every LLM waypoint agent.

    Attributes:
        llm: Model spec for :func:`vlnverse.llm.make_llm` (``openai:MODEL?…``, ``hf:PATH``,
            ``replay:FILE``); used when the harness passes no client.
        perception: ``vlm`` (panorama images go to the model) or ``gt`` (privileged text:
            visible object categories per direction from the semantic sensor, room type).
        prompt_variant: ``json`` (reply as a JSON object) or ``lines`` (``Key: value`` lines,
            as NavGPT/MapGPT's string mode). Both are parsed either way.
        samples: Completions per decision; the most frequent valid action wins.
        temperature: Sampling temperature (0 = greedy).
        max_reply_tokens: Cap on tokens per reply.
        max_tokens_per_episode: Stop the episode (an agent error) once this many tokens
            were used (0 = no cap).
        answer_tokens: The most (estimated) tokens one model answer adds to later prompts:
            a summary, a plan, an expert's answer, a debate argument, a memory field
            (longer ones are cut and counted; :mod:`vlnverse.agents.fitting`), so a verbose
            model does not grow its own prompts.
        history_window: Past steps listed verbatim in the prompt (0: every step of the
            episode).
        min_steps_before_stop: STOP is not offered before this many steps (MapGPT's
            ``stop_after``; with no place to move to, turning in place is offered instead).
        panorama_images: ``vlm``: panorama views sent as images each step, each labelled
            with its heading (all 12 by default, as NavGPT describes and MapGPT shows every
            direction); with fewer, the views toward candidates first, then the others
            spread evenly around.
        local_map: Add the top-down local map drawn from the agent's own depth (not in
            NavGPT/MapGPT: off by default).
        free_space_hint: Tell the model that bumping into things can end the episode and
            to prefer candidates with free space (not in NavGPT/MapGPT: off by default).
        privileged_subgoals: Long-horizon: also show the dataset's split of the chained
            instruction into sub-goal instructions, how many there are and which one is
            active. Privileged (the env observes only the chained instruction): listed in
            ``run.json``'s ``privileged`` as ``subgoal_instructions``. Off, the agent is told
            only that the instruction chains goals and how many times it has stopped.
        ask_oracle: Dialogue episodes: offer the ASK action while questions remain.
        waypoints: Candidate waypoint settings.
        waypoint_predictor: ``learned`` (the trained predictor of
            :mod:`vlnverse.learning.waypoints`, as the paper's agents use; needs torch),
            ``depth`` (:class:`~vlnverse.agents.waypoints.depth.DepthWaypoints`: free space minus
            a safety margin, embodiment-aware, not the paper's setting) or a ``module:attr``
            factory called with the ``waypoints`` settings that returns a
            :class:`~vlnverse.agents.waypoints.predictor.WaypointPredictor`.
        waypoint_checkpoint: The ``learned`` predictor's checkpoint (``None``: the one
            shipped in ``vlnverse/data/waypoints/``).
        panorama: Camera rig settings.
    """

    llm: str = "none"
    perception: str = "vlm"
    prompt_variant: str = "json"
    samples: int = 1
    temperature: float = 0.0
    max_reply_tokens: int = 600
    max_tokens_per_episode: int = 0
    answer_tokens: int = 200
    history_window: int = 8
    min_steps_before_stop: int = 0
    panorama_images: int = 12
    local_map: bool = False
    free_space_hint: bool = False
    privileged_subgoals: bool = False
    ask_oracle: bool = True
    waypoints: WaypointConfig = field(default_factory=WaypointConfig)
    waypoint_predictor: str = "learned"
    waypoint_checkpoint: str | None = None
    panorama: PanoramaConfig = field(default_factory=PanoramaConfig)

    def __post_init__(self) -> None:
        from vlnverse.llm.factory import parse_spec

        parse_spec(self.llm)  # a malformed spec fails at construction, not mid-run
        if self.perception not in PERCEPTION_MODES:
            raise ConfigError(f"perception must be one of {PERCEPTION_MODES}, got {self.perception!r}")
        if self.prompt_variant not in PROMPT_VARIANTS:
            raise ConfigError(f"prompt_variant must be one of {PROMPT_VARIANTS}, got {self.prompt_variant!r}")
        for name in ("samples", "max_reply_tokens", "answer_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("max_tokens_per_episode", "history_window", "min_steps_before_stop", "panorama_images"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
        if not 0.0 <= float(self.temperature) <= 2.0:
            raise ConfigError(f"temperature must be in [0, 2], got {self.temperature!r}")
        if self.waypoint_predictor not in WAYPOINT_PREDICTORS and ":" not in str(self.waypoint_predictor):
            raise ConfigError(f"waypoint_predictor must be one of {WAYPOINT_PREDICTORS} or 'module:attr', "
                              f"got {self.waypoint_predictor!r}")
        if self.waypoint_predictor == "learned" and isinstance(self.panorama, PanoramaConfig) and self.panorama.views != 12:
            raise ConfigError(f"waypoint_predictor: learned reads the 12-view panorama (panorama.views is "
                              f"{self.panorama.views}); use waypoint_predictor: depth for another rig")
        if self.waypoint_checkpoint is not None and self.waypoint_predictor != "learned":
            raise ConfigError("waypoint_checkpoint is the learned predictor's; set waypoint_predictor: learned")
        if not isinstance(self.waypoints, WaypointConfig) or not isinstance(self.panorama, PanoramaConfig):
            raise ConfigError("waypoints and panorama must be mappings of their settings")

    @property
    def privileged(self) -> tuple[str, ...]:
        """The privileged inputs this configuration reads (recorded in ``run.json``)."""
        return (("semantic_categories", "room_type") if self.perception == "gt" else ()) + (
            ("subgoal_instructions",) if self.privileged_subgoals else ())


@dataclass(frozen=True)
class MapHistoryConfig(LLMAgentConfig):
    """``map_history`` settings: the shared ones (MapGPT's defaults: the whole episode's
    history, STOP not before step 3) plus the topological map's.

    Attributes:
        place_merge_distance: Observed or visited places closer than this are one place (m).
        supplementary_images: ``vlm``: images of observed but unvisited places sent as
            supplementary information (the view each was seen through, most recent first).
    """

    history_window: int = 0
    min_steps_before_stop: int = 3
    place_merge_distance: float = 0.75
    supplementary_images: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("map_history", place_merge_distance=self.place_merge_distance)
        if isinstance(self.supplementary_images, bool) or not isinstance(self.supplementary_images, int) \
                or self.supplementary_images < 0:
            raise ConfigError(f"supplementary_images must be a non-negative integer, got {self.supplementary_images!r}")
