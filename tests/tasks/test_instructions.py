"""Prior instructions: grounded in the path and the scene graph."""

from __future__ import annotations

import numpy as np

from vlnverse.tasks.pathdesc import LANDMARK_LATERAL, Leg, PathFacts, describe_path, turn_word
from vlnverse.tasks.prior import (
    chain_instruction,
    coarse_instruction,
    coarse_variants,
    fine_instruction,
)
from vlnverse.tasks.sampling import SamplingConfig, TrajectorySampler

IMPERATIVE = ("Turn", "Walk", "Go", "Move", "Head", "Face", "Stop", "Wait")


def _distance_to_path(point, points):
    best = np.inf
    for a, b in zip(points[:-1, :2], points[1:, :2], strict=False):
        ab = b - a
        t = np.clip(((point[:2] - a) @ ab) / max(ab @ ab, 1e-12), 0, 1)
        best = min(best, float(np.linalg.norm(point[:2] - (a + t * ab))))
    return best


def test_turn_words():
    assert turn_word(0.1) == "straight"
    assert turn_word(np.pi / 2) == "left"
    assert turn_word(-np.pi / 2) == "right"
    assert turn_word(np.pi) == "around"


def test_fine_instructions_are_grounded_in_the_path(context):
    sampler = TrajectorySampler(context, SamplingConfig(), np.random.default_rng(1))
    rng = np.random.default_rng(2)
    texts = set()
    for t in sampler.sample_fine(15):
        facts = describe_path(context, t.points, t.start_yaw)
        instruction = fine_instruction(context, facts, rng)
        text = instruction.text
        texts.add(text)
        sentences = [s.strip() for s in text.split(". ") if s.strip()]
        assert all(s.split()[0] in IMPERATIVE for s in sentences), text
        rooms_on_path = {context.room_at(p) for p in t.points} | set(facts.rooms)
        for room_id in instruction.rooms:
            assert room_id in rooms_on_path
            assert context.room_label(room_id) in text
        for object_id in instruction.landmarks:
            info = context.objects[object_id]
            assert info.phrase in text
            half = 0.5 * float(np.max(info.aabb_max[:2] - info.aabb_min[:2]))
            assert _distance_to_path(info.center, t.points) <= LANDMARK_LATERAL + half + 1.0
        last = sentences[-1]
        assert last.startswith(("Stop", "Wait")) or last.endswith("stop.")
        if facts.end_object:
            assert context.objects[facts.end_object[0]].phrase in last
        else:  # never a room alone: how far past the room entrance (or the last turn)
            assert context.room_label(facts.end_room) in last and "metres" in last
        if facts.end_room:
            assert facts.end_room in rooms_on_path
    assert len(texts) == 15  # varied templates


def test_coarse_instructions_name_real_objects_with_colour_and_room(context):
    sampler = TrajectorySampler(context, SamplingConfig(), np.random.default_rng(4))
    rng = np.random.default_rng(5)
    for t in sampler.sample_coarse(16):
        instruction = coarse_instruction(t.target, rng, "formal")
        obj = next(o for o in context.scene.objects if o.object_id == t.target.object_id)
        assert set(instruction.styles) == {"formal", "natural", "casual"}
        assert instruction.text == instruction.styles["formal"]
        for style_text in instruction.styles.values():
            lowered = style_text.lower()
            assert obj.category.replace("_", " ") in lowered
            assert obj.color in lowered
            assert context.room_label(context.objects[obj.object_id].room_id) in lowered
        assert instruction.landmarks[0] == obj.object_id
        assert len(coarse_variants(t.target, 10)) == 10


def test_chain_instruction_has_one_part_per_subgoal(context):
    sampler = TrajectorySampler(context, SamplingConfig(min_legs=3, max_legs=3), np.random.default_rng(6))
    rng = np.random.default_rng(7)
    legs = sampler.sample_chains(1)[0]
    parts = [coarse_instruction(leg.target, rng) for leg in legs]
    chained = chain_instruction(parts, rng)
    assert len(chained.subgoals) == 3
    assert chained.text.startswith("First, ") and "Finally, " in chained.text
    for part in parts:
        assert part.styles["natural"][1:] in chained.text


def facts_of(*legs, end_object=None, end_distance=4.2, end_entered=True, end_room="kitchen_0"):
    return PathFacts(legs=tuple(legs), start_room="living_room_0", end_room=end_room, end_object=end_object,
                     rooms=("living_room_0", end_room), length=sum(leg.length for leg in legs),
                     end_distance=end_distance, end_entered=end_entered)


def test_an_ending_without_an_object_gives_the_distance_past_the_entrance(context):
    leg = Leg("straight", 7.0, rooms_entered=("kitchen_0",), passage="door", rooms_along=(3.0,))
    for seed in range(6):
        text = fine_instruction(context, facts_of(leg), np.random.default_rng(seed)).text
        last = text.rsplit(". ", 1)[-1]
        assert "4 metres" in last and "kitchen" in last and "Wait there" not in text
    same_room = facts_of(Leg("straight", 2.6), end_entered=False, end_distance=2.6, end_room="living_room_0")
    assert "2.5 metres" in fine_instruction(context, same_room, np.random.default_rng(0)).text
    near = facts_of(leg, end_object=("fridge_0", "ahead"))
    assert "fridge" in fine_instruction(context, near, np.random.default_rng(0)).text.split(". ")[-1]


def test_an_open_plan_opening_is_not_a_door(context):
    opening = Leg("straight", 6.0, rooms_entered=("kitchen_0",), passage="opening", rooms_along=(2.0,))
    door = Leg("straight", 6.0, rooms_entered=("kitchen_0",), passage="door", rooms_along=(2.0,))
    for seed in range(8):
        assert "door" not in fine_instruction(context, facts_of(opening), np.random.default_rng(seed)).text
    assert any("door" in fine_instruction(context, facts_of(door), np.random.default_rng(s)).text for s in range(4))


def test_landmarks_and_rooms_are_mentioned_in_path_order(context):
    enter_then_pass = Leg("straight", 6.0, rooms_entered=("kitchen_0",), landmark=("fridge_0", "left"),
                          rooms_along=(1.0,), landmark_along=4.0)
    pass_then_enter = Leg("straight", 6.0, rooms_entered=("kitchen_0",), landmark=("sofa_0", "right"),
                          rooms_along=(4.0,), landmark_along=1.0)
    for seed in range(6):
        rng = np.random.default_rng(seed)
        text = fine_instruction(context, facts_of(enter_then_pass, pass_then_enter), rng).text
        first, second = text.index("kitchen"), text.index("fridge")
        assert first < second < text.index("sofa") < text.rindex("kitchen")
    # describe_path records where along the leg each event happens
    facts = describe_path(context, np.array([[3.0, 2.5, 0.0], [9.0, 2.5, 0.0]]), 0.0)
    leg = facts.legs[0]
    assert leg.rooms_entered == ("kitchen_0",) and leg.passage == "door"
    assert leg.rooms_along[0] == np.float64(leg.rooms_along[0]) and 2.4 <= leg.rooms_along[0] <= 3.6
    assert facts.end_entered and 2.4 <= facts.end_distance <= 3.6
