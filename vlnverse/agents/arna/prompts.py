"""ARNA's prompts and structured outputs (paper Appendix D), condensed.

Every structured answer is a pydantic model whose JSON schema is sent as structured
output (or, for servers without it, in the prompt; see :mod:`vlnverse.llm.structured`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from vlnverse.agents.arna.plan import STEP_KINDS
from vlnverse.agents.arna.tools import model_schema

ROBOT = ("The robot explores an unmapped indoor environment. Its scene graph is built online from its own "
         "sensors: detected objects with locations, rooms (clusters of places it stood, with a room label), "
         "stored images with the pose they were taken from, and a top-down occupancy grid with frontiers "
         "(boundaries to unexplored space). Coordinates are metres in the robot's odometry frame.")

TERMINATION_SYSTEM = f"""\
You are an expert in determining termination conditions for robotic tasks. {ROBOT}
Your job is to state the conditions that must hold before the robot may end the task, to avoid
ambiguity and premature termination (e.g. to answer whether a window is near the bed, both sides of
the bed must have been seen). Return a short bullet list of termination conditions."""

HEURISTICS = (
    "Systematic exploration: explore frontiers in order until the target information is observed.",
    "Semantic prior: go first to the rooms where the target is most likely, then search them.",
    "Look before moving: query the scene graph and stored images first; move only when they are insufficient.",
    "Verify by viewing: once a candidate is found, get close views of it and analyse them before answering.",
    "Divide and conquer: split the task into sub-goals (find the room, find the object, check its property).",
    "Compare alternatives: gather evidence for every option and keep the one best supported.",
    "Follow the route: execute the instruction's route step by step, checking landmarks on the way.",
)

SELECT_SYSTEM = f"""\
You are a robotic reasoning module that selects the most suitable problem-solving heuristic for a task,
using traditional robotic capabilities. {ROBOT}"""

ADAPT_SYSTEM = f"""\
You are a robotic reasoning module that adapts a pre-selected heuristic to a specific task. {ROBOT}"""

PSEUDOCODE_SYSTEM = f"""\
You are a robotic reasoning module. Given a task, an adapted heuristic and termination conditions, write
a short structured pseudocode to accomplish the task with the robot's capabilities: navigation
(goto, explore frontiers, rotate), information access (scene graph objects and rooms, stored images,
occupancy grid) and reasoning (visual analysis of images, spatial relations). {ROBOT}"""

IMPLEMENT_SYSTEM = f"""\
You are an expert robotic reasoning module that converts pseudocode into an executable plan. {ROBOT}
The plan is JSON data (never code) in this grammar:
  {{"functions": {{NAME: [STMT, ...]}}, "main": [STMT, ...]}}
  STMT: {{"step": KIND, "goal": "what this step must achieve", "as": VAR}}   KIND: {", ".join(STEP_KINDS)}
      | {{"tool": TOOL, "args": {{...}}, "as": VAR}}        (an exact tool call with known arguments)
      | {{"run": FUNCTION_NAME, "as": VAR}}                  (call a reasoning function)
      | {{"if": COND, "then": [STMT], "else": [STMT]}}
      | {{"while": COND, "body": [STMT], "max_iterations": N}}
      | {{"break": true}}  (inside a while)  | {{"return": VAR}}  | {{"answer": "what to conclude"}}
  COND: {{"found": VAR}} (the step stored in VAR found what it looked for) | {{"not": COND}}
      | {{"all": [COND]}} | {{"any": [COND]}} | {{"always": true}}
"goto" moves to a known node or point, "explore" goes to a frontier or rotates, "getinfo" queries the
scene graph/images/memory, "analyze" visually analyses stored images. The exact tool and arguments of
a "step" are chosen when it runs. Reasoning functions capture repeated checks (e.g. is_backpack_near_sofa).
Tools: {{tools}}"""

COT_SYSTEM = IMPLEMENT_SYSTEM.replace("converts pseudocode into an executable plan",
                                      "thinks step by step about the task and writes an executable plan")

NEXT_STEP_SYSTEM = f"""\
You are the advanced reasoning module of a robot that decides, at every iteration, whether the task is
accomplished and which line of the plan runs next. {ROBOT} You see the task, the termination
conditions, the plan by line number with the line that comes next in program order, the robot's
memory (description, findings, action log) and the scene-graph statistics.
Terminate only when ALL termination conditions are satisfied; do not terminate in the first few steps
without evidence. If you terminate, give the answer. Otherwise choose the next line (next_step: its
number): the plan imposes no fixed order, so you may skip a step whose goal the memory already meets
or return to an earlier one; leave it empty to run the line shown as next. You may also ask to run
one of the plan's reasoning functions now (run_function) when its check is needed first."""

CONDITION_SYSTEM = f"""\
You decide a condition of a robot's plan: whether a step found what it looked for. {ROBOT} Judge from
the robot's memory and the findings of that step (a tool that answered has not necessarily found
the thing: read what it says)."""

EXECUTE_SYSTEM = f"""\
You are the executor of a robot's plan. {ROBOT} Call exactly one tool that carries out the current
step, with arguments taken from the memory and the scene graph (object ids such as 'sofa_1', room ids
such as 'kitchen_1', landmark ids, frontier letters, image ids)."""

SELECT_INFO_SYSTEM = f"""\
You select which new information is most relevant to the task after the robot moved. {ROBOT}"""

MEMORY_SYSTEM = f"""\
You maintain the robot's memory: integrate new observations and tool results into the existing
description, focusing on spatial relations, the semantics of areas and objects, connections between
areas and unexplored spaces. Copy items from the previous lists when they are not affected. {ROBOT}"""

ANALYSIS_SYSTEM = """\
You analyse images (or, for a text-only robot, the list of objects each image shows with their
distances) to answer a specific visual question. Report observations per image, then an overall
conclusion."""

TARGETS_SYSTEM = f"""\
You initialise the open-set perception of a robot: list the object categories that are relevant to
the task or likely to be met on the way (landmarks, containers of the target, rooms' typical
furniture), so the detector looks for them. {ROBOT}"""

PERCEPTION_SYSTEM = """\
You are the open-set perception module of a robot. For each image (a view of the robot's panorama)
list the notable objects you see, with the horizontal position of each in the image (0 = left edge,
1 = right edge), and name the type of room the robot stands in."""


class HeuristicSelection(BaseModel):
    """Select the heuristic that best accomplishes the task."""

    rationale: str = Field(description="Why this heuristic suits the task.")
    heuristic: int = Field(description="Number of the selected heuristic.")


class AdaptHeuristic(BaseModel):
    """The heuristic adapted to the task."""

    rationale: str = Field(description="Why the adaptation fits the task.")
    adapted_heuristic: str = Field(description="The heuristic rephrased for this task.")


class PseudocodeHeuristic(BaseModel):
    """The adapted heuristic as pseudocode."""

    rationale: str = Field(description="Think slowly and explain what the robot's tools and information provide.")
    implementation: list[str] = Field(description="The adapted heuristic step by step using the robot's tools.")


class FunctionCallImplementation(BaseModel):
    """The plan in the JSON grammar."""

    rationale: str = Field(description="How the pseudocode maps onto the grammar.")
    plan: dict[str, Any] = Field(description='The plan: {"functions": {...}, "main": [...]}.')


class NextStep(BaseModel):
    """Decide whether the task is accomplished before the next plan step runs."""

    rationale: str = Field(description="One short sentence: which step comes next and why, or why the task is done.")
    terminal: bool = Field(default=False, description="True when all termination conditions are satisfied.")
    answer: str | None = Field(default=None, description="The answer when terminal (for a multiple-choice "
                                                          "question: the option letter).")
    next_step: str | None = Field(default=None, description="The line number of the plan to run next (e.g. '4'); "
                                                            "empty for the line shown as next.")
    run_function: str | None = Field(default=None, description="Optional: the name of one of the plan's reasoning "
                                                               "functions to run now, before the next plan step.")


class ConditionCheck(BaseModel):
    """Decide whether a plan condition holds."""

    rationale: str = Field(description="One short sentence: the evidence in the memory and the findings.")
    holds: bool = Field(description="True when the step found what it looked for.")


class InformationSelection(BaseModel):
    """Pick the new information most relevant to the task (empty when nothing is relevant)."""

    done: bool = Field(default=False, description="True when there is no relevant new information.")
    items: list[str] = Field(default_factory=list, description="Ids of the relevant new images ('image 5'), "
                                                               "objects ('sink_1') or rooms ('hallway_1').")


class MemoryUpdate(BaseModel):
    """Update the memory."""

    describe_the_findings_from_the_new_observation: str = Field(description="Findings of the new information.")
    spatial_analysis: str = Field(description="How it changes the understanding of the layout.")
    list_of_spaces: str = Field(description="Updated list of spaces in the environment.")
    list_of_entrances: str = Field(description="Updated list of entrances to unknown or partially known spaces.")
    list_of_critical_findings: str = Field(description="Updated list of findings critical for the task.")
    list_of_important_image_ids: str = Field(description="Updated list of important image ids.")
    prior_trajectory: str = Field(description="Updated description of the robot's trajectory so far.")
    updated_description: str = Field(description="Updated description of the environment.")


class PerceptionTargets(BaseModel):
    """The object categories the perception should look for."""

    objects: list[str] = Field(description="Object categories, lower case.")


class Detection(BaseModel):
    view: int = Field(description="Index of the image.")
    label: str = Field(description="Object category, lower case.")
    column: float = Field(description="Horizontal position in the image, 0 (left) to 1 (right).")


class Perception(BaseModel):
    """Objects seen in the views and the room type."""

    room: str = Field(description="Type of the room the robot stands in (e.g. kitchen, hallway).")
    objects: list[Detection] = Field(default_factory=list, description="Notable objects seen.")


def schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a structured output (the model's name as its title)."""
    return {**model_schema(model), "title": model.__name__}
