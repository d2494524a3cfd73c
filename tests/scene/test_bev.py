"""Bird's-eye views: the names a reader sees on the map."""

from __future__ import annotations

from vlnverse.scene.bev import room_label


def test_a_room_is_named_once_in_words():
    assert room_label("living_room_0", "living_room") == "living room 0"
    assert room_label("room_3", "unknown") == "room 3"
    assert room_label("Hall", "corridor") == "Hall (corridor)"
