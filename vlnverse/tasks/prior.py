"""Prior-based instruction initialization (paper §3.3.2): text from the scene graph alone.

Always available, no LLM: fine-grained step-by-step text in the second-person imperative
(turns, straight runs, rooms entered and landmarks on the left/right in the order they are
walked past, doors named only where there is a door, never for an open-plan opening, and
a precise end point: an object at the goal, else the distance past the room entrance);
coarse-grained target descriptions in the three styles formal / natural / casual. Every
slot has several template variants, drawn from the generator passed in.
"""

from __future__ import annotations

import numpy as np

from vlnverse.tasks.context import SceneContext
from vlnverse.tasks.episode import STYLES, Instruction
from vlnverse.tasks.pathdesc import PathFacts
from vlnverse.tasks.targets import TargetDescription

PRIOR_VERSION = "2"

INITIAL_TURN = {
    "left": ["Turn left", "Turn to your left", "Face left"],
    "right": ["Turn right", "Turn to your right", "Face right"],
    "around": ["Turn around", "Turn around to face the other way", "Turn back"],
}
WALK = ["walk forward", "go straight", "move forward", "head straight ahead", "walk straight"]
TURN = {
    "left": ["turn left", "take a left", "make a left turn", "go left"],
    "right": ["turn right", "take a right", "make a right turn", "go right"],
    "around": ["turn around", "turn back"],
}
PASS = ["past the {lm} on your {side}", "keeping the {lm} on your {side}", "passing the {lm} on your {side}",
        "with the {lm} on your {side}"]
ENTER = ["into the {room}", "and enter the {room}", "to enter the {room}"]
ENTER_PASSAGE = {
    "door": ["through the doorway into the {room}", "through the door into the {room}",
             "through the doorway to enter the {room}"],
    "opening": ["through the opening into the {room}", "on into the open {room}", "into the {room}"],
}
END = {
    "ahead": ["Stop in front of the {obj}.", "Stop when the {obj} is right in front of you.",
              "Wait in front of the {obj}."],
    "left": ["Stop with the {obj} on your left.", "Stop next to the {obj} on your left."],
    "right": ["Stop with the {obj} on your right.", "Stop next to the {obj} on your right."],
    "behind": ["Stop with the {obj} behind you.", "Stop with your back to the {obj}."],
}
END_DISTANCE = {
    True: ["Stop about {d} metres into the {room}.", "Go about {d} metres into the {room} and stop.",
           "Walk about {d} metres into the {room} and stop."],
    False: ["Stop after about {d} metres, in the {room}.", "Walk about {d} metres and stop in the {room}."],
}
CONNECT = [", then ", " and then ", ", and "]

COARSE = {
    "formal": [
        "Proceed to the {room}. Locate the {target}{rel}.",
        "Go to the {room} and locate the {target}{rel}.",
        "Navigate to the {target}{rel} in the {room}.",
        "Enter the {room} and approach the {target}{rel}.",
    ],
    "natural": [
        "Could you please go to the {room} and find the {target}{rel}?",
        "Please head to the {room}; you'll find the {target}{rel} there.",
        "Go to the {room} and find the {target}{rel}, please.",
        "Would you go to the {room} and stop by the {target}{rel}?",
    ],
    "casual": [
        "{Room}. Find the {target}{rel}.",
        "Head to the {room}, the {target}{rel}.",
        "{Target}{rel}, in the {room}. Go.",
        "Go find the {target}{rel}. {Room}.",
    ],
}
CHAIN = ["First, {x}", "Then, {x}", "After that, {x}", "Next, {x}", "Finally, {x}"]


def _pick(rng: np.random.Generator, options: list[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _distance_words(metres: float) -> str:
    """A spoken distance: halves of a metre up to 3 m, whole metres beyond (at least 1)."""
    value = max(1.0, round(metres * 2) / 2 if metres < 3 else float(round(metres)))
    return f"{value:g}"


def end_sentence(context: SceneContext, facts: PathFacts, rng: np.random.Generator) -> str:
    """The end point: the object at the goal, else how far past the room entrance (or the last turn)."""
    if facts.end_object:
        object_id, where = facts.end_object
        return _pick(rng, END[where]).format(obj=context.objects[object_id].phrase)
    return _pick(rng, END_DISTANCE[facts.end_entered]).format(
        d=_distance_words(facts.end_distance), room=context.room_label(facts.end_room))


def fine_instruction(context: SceneContext, facts: PathFacts, rng: np.random.Generator) -> Instruction:
    """A step-by-step fine-grained instruction for ``facts``."""
    sentences: list[str] = []
    mentioned_rooms: list[str] = []
    landmarks: list[str] = []
    pending_turn = facts.legs[0].turn if facts.legs else "straight"
    if pending_turn != "straight":
        sentences.append(_pick(rng, INITIAL_TURN[pending_turn]) + ".")
    for index, leg in enumerate(facts.legs):
        clause = _pick(rng, WALK)
        rooms_so_far = 0
        for kind, ident in leg.events():
            if kind == "landmark":
                clause += (", " if rooms_so_far else " ") + _pick(rng, PASS).format(
                    lm=context.objects[ident].phrase, side=leg.landmark[1])
                landmarks.append(ident)
                continue
            template = _pick(rng, ENTER_PASSAGE[leg.passage] if leg.passage else ENTER)
            clause += (" " if rooms_so_far == 0 else ", then ") + template.format(room=context.room_label(ident))
            rooms_so_far += 1
            mentioned_rooms.append(ident)
        if index + 1 < len(facts.legs):
            turn = facts.legs[index + 1].turn
            if turn != "straight":
                clause += _pick(rng, CONNECT) + _pick(rng, TURN[turn])
        sentences.append(_cap(clause) + ".")
    sentences.append(end_sentence(context, facts, rng))
    if facts.end_object:
        landmarks.append(facts.end_object[0])
    elif facts.end_room and facts.end_room not in mentioned_rooms:
        mentioned_rooms.append(facts.end_room)
    return Instruction(text=" ".join(sentences), style="natural", landmarks=tuple(dict.fromkeys(landmarks)),
                       rooms=tuple(mentioned_rooms))


def coarse_text(target: TargetDescription, style: str, template: str) -> str:
    """Fill one coarse template."""
    return template.format(room=target.room, Room=_cap(target.room), target=target.phrase,
                           Target=_cap(target.phrase), rel=target.relation_text)


def coarse_instruction(target: TargetDescription, rng: np.random.Generator, style: str = "natural") -> Instruction:
    """A coarse-grained instruction in all three styles; ``text`` is ``style``'s variant."""
    styles = {s: coarse_text(target, s, _pick(rng, COARSE[s])) for s in STYLES}
    landmarks = (target.object_id,) + ((target.reference_id,) if target.reference_id else ())
    return Instruction(text=styles[style], style=style, styles=styles, landmarks=landmarks,
                       rooms=(target.room_id,) if target.room_id else ())


def coarse_variants(target: TargetDescription, n: int = 10) -> list[str]:
    """``n`` rigid template instructions sharing the target (the Verifier's text input)."""
    all_texts = [coarse_text(target, s, t) for i in range(4) for s in STYLES for t in COARSE[s][i:i + 1]]
    return all_texts[:n]


def chain_instruction(parts: list[Instruction], rng: np.random.Generator) -> Instruction:
    """Join per-sub-goal instructions (natural style) into one long-horizon instruction."""
    subgoals = tuple(p.styles.get("natural", p.text) for p in parts)
    connectors = ["First, {x}"] + [_pick(rng, CHAIN[1:4]) for _ in parts[1:-1]] + ["Finally, {x}"]
    text = " ".join(c.format(x=_lower_first(s)) for c, s in zip(connectors, subgoals, strict=False))
    landmarks = tuple(dict.fromkeys(x for p in parts for x in p.landmarks))
    rooms = tuple(r for p in parts for r in p.rooms)
    return Instruction(text=text, style="natural", subgoals=subgoals, landmarks=landmarks, rooms=rooms)
