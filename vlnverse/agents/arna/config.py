"""``arna`` settings: the shared LLM-agent ones plus ARNA's budgets, map and executor limits."""

from __future__ import annotations

from dataclasses import dataclass

from vlnverse.agents.config import LLMAgentConfig, _positive
from vlnverse.errors import ConfigError

WORKFLOWS = ("self_discover", "cot")


@dataclass(frozen=True)
class ARNAConfig(LLMAgentConfig):
    """``arna`` settings (paper §4–§6.3).

    The environment-step budget is the env's own (``--max-steps``; §6.3: 500), one place for
    both: its end is ``step_limit``. An environment step is one waypoint move of at most
    ``waypoint_step`` metres (or a turn on the spot).

    Attributes:
        max_cost_usd: List cost of the episode's model calls (cache hits included, so a
            re-run ends the same way) before it ends inconclusive (``cost_limit``; §6.3: $3).
            A model without a price (a local server, not in the price table nor in
            ``VLNVERSE_LLM_PRICES``) needs ``max_tokens_per_episode`` instead, which then
            ends the run the same way.
        max_wall_s: Wall-clock seconds of the agent's episode before it ends inconclusive
            (``time_limit``); 0 = no limit.
        max_function_call_errors: Failed function calls (after their repair turn) that end
            the run inconclusive (``function_call_error``; the paper ends at the first): invalid
            tool calls and structured outputs that never followed their schema (next step,
            condition, memory update, workflow stages); a ``next_step`` that names no line
            unambiguously (``Step 4``, ``#4``, ``4 (goto kitchen)`` are read) is one.
        max_perception_failures: ``vlm`` perception replies in a row that never followed
            their schema (after the repair turn) that end the run inconclusive
            (``perception_error``); counted apart from function-call errors (in the paper
            perception is a detector's job, not a plan step); 0 = never.
        max_plan_statements: Statements the plan interpreter executes before the run ends
            inconclusive (``statement_limit``).
        plan_repairs: Extra tries when a generated plan is outside the grammar (each
            rejection is counted); then the run ends (``function_call_error``).
        fallback_plan: Instead of ending, run the built-in exploration plan when no plan
            passed (a departure from the paper: a model that cannot write a plan still explores).
        workflow: ``self_discover`` (the paper's four stages) or ``cot`` (one chain-of-thought
            call: the Table 1c ablation).
        grid_resolution: Occupancy cell side (m).
        grid_extent: Side of the mapped square around the start (m).
        min_new_cells: A view is stored in the sensor graph when it adds this many cells
            (or shows an object).
        max_images: Most stored views (older pixels are dropped, their records kept).
        waypoint_step: Longest move of one navigation step along the A* path (m).
        clearance: Extra distance kept between the body and mapped obstacles by A* (m; doors
            are narrow: 0.05 m more already closes some); under
            Strict physics the path also keeps to seen floor.
        goal_tolerance: A navigation goal is reached within this distance (m).
        max_nav_steps: Environment steps one navigation goal may take.
        memory_updates: Ask the model to update the memory after each step (off: the
            action log only; cheaper).
    """

    max_cost_usd: float = 3.0
    max_wall_s: float = 0.0
    max_function_call_errors: int = 1
    max_perception_failures: int = 3
    max_plan_statements: int = 200
    plan_repairs: int = 1
    fallback_plan: bool = False
    workflow: str = "self_discover"
    grid_resolution: float = 0.1
    grid_extent: float = 40.0
    min_new_cells: int = 150
    max_images: int = 400
    waypoint_step: float = 1.5
    clearance: float = 0.05
    goal_tolerance: float = 0.6
    max_nav_steps: int = 25
    memory_updates: bool = True
    local_map: bool = False
    max_reply_tokens: int = 1500

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.workflow not in WORKFLOWS:
            raise ConfigError(f"arna.workflow must be one of {WORKFLOWS}, got {self.workflow!r}")
        for name in ("max_function_call_errors", "max_plan_statements", "min_new_cells",
                     "max_images", "max_nav_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"arna.{name} must be a positive integer, got {value!r}")
        for name in ("plan_repairs", "max_perception_failures"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"arna.{name} must be a non-negative integer, got {value!r}")
        _positive("arna", max_cost_usd=self.max_cost_usd, grid_resolution=self.grid_resolution,
                  grid_extent=self.grid_extent, waypoint_step=self.waypoint_step, goal_tolerance=self.goal_tolerance)
        if self.clearance < 0:
            raise ConfigError(f"arna.clearance must be >= 0, got {self.clearance!r}")
        if not isinstance(self.fallback_plan, bool):
            raise ConfigError("arna.fallback_plan must be true or false")
        if self.max_wall_s < 0:
            raise ConfigError(f"arna.max_wall_s must be >= 0, got {self.max_wall_s!r}")
