import pytest

from vlnverse.errors import ConfigError
from vlnverse.scene.procgen.house import HouseOptions, generate_house
from vlnverse.scene.procgen.placement import BODY_BAND


def test_same_seed_same_house_different_seed_different_house(small_house):
    again = generate_house(11, HouseOptions(min_rooms=6, max_rooms=7))
    assert again.summary() == small_house.summary()
    other = generate_house(12, HouseOptions(min_rooms=6, max_rooms=7))
    assert other.summary() != small_house.summary()


def test_small_objects_stand_on_their_supports(small_house):
    by_id = {o.object_id: o for o in small_house.objects}
    supported = [o for o in small_house.objects if o.support is not None]
    assert supported, "a furnished house has objects on supports"
    for obj in supported:
        support = by_id[obj.support]
        tops = [(z, rect) for z, rect in support.world_surfaces() if abs(z - obj.position[2]) < 0.005]
        assert tops, (obj.object_id, support.object_id)
        x0, y0, x1, y1 = obj.footprint
        assert any(r[0] - 1e-6 <= x0 and x1 <= r[2] + 1e-6 and r[1] - 1e-6 <= y0 and y1 <= r[3] + 1e-6
                   for _, r in tops), obj.object_id


def test_floor_objects_do_not_overlap(small_house):
    floor = [o for o in small_house.objects if o.support is None and o.z_range[0] < BODY_BAND[1]
             and o.z_range[1] > BODY_BAND[0]]
    for i, a in enumerate(floor):
        for b in floor[i + 1:]:
            ax0, ay0, ax1, ay1 = a.footprint
            bx0, by0, bx1, by1 = b.footprint
            overlap = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
            assert min(overlap) <= 1e-6, (a.object_id, b.object_id)


def test_every_room_keeps_navigable_area_and_rules_hold(small_house):
    assert min(small_house.navigable_area) >= 0.5
    cats = {o.category for o in small_house.objects}
    types = {r.room_type for r in small_house.plan.rooms}
    if "bedroom" in types:
        assert "bed" in cats
    if "bathroom" in types:
        assert "toilet" in cats or "bathroom_sink" in cats
    movable = {o.category for o in small_house.objects if o.movable}
    assert movable and not ({"bed", "wardrobe", "sofa"} & movable)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(min_rooms=0, max_rooms=2), "rooms range 0-2 is invalid"),
    (dict(min_rooms=8, max_rooms=5), "rooms range 8-5 is invalid"),
    (dict(min_rooms=3, max_rooms=13), "rooms range 3-13 is invalid"),
    (dict(agent_radius=0.0), "agent_radius must be in"),
    (dict(max_attempts=0), "max_attempts must be >= 1"),
])
def test_invalid_options_raise_config_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        HouseOptions(**kwargs)


def test_a_negative_seed_is_refused():
    with pytest.raises(ConfigError, match="seed must be >= 0, got -1"):
        generate_house(-1)


def test_a_support_exactly_as_wide_as_its_item_does_not_crash_placement():
    """Scene 55 of the seed-0 corpus (the paper-scale release) has a shelf whose free width
    equals a decoration's size up to a rounding error; placement once drew from an empty
    range there (``ValueError: high - low < 0``) and stopped the whole release build."""
    from vlnverse.scene.procgen.corpus import scene_seed
    from vlnverse.scene.procgen.house import HouseOptions

    house = generate_house(scene_seed(0, 55), HouseOptions())
    assert house.summary()["num_objects"] > 0
