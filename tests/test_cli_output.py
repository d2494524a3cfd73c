"""Human tables never hide what tells rows apart."""

from __future__ import annotations

from vlnverse.cli.output import print_table
from vlnverse.cli.scenes_procgen import _short_names


def test_long_cells_wrap_instead_of_being_cut(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    paths = [f"/a/very/long/folder/name/that/fills/the/console/scene_{i:04d}/scene.usda" for i in range(2)]
    print_table("t", ("scene", "result"), [(p, "ok") for p in paths])
    text = "".join(line.strip(" │┃") for line in capsys.readouterr().out.splitlines())
    assert "…" not in text and all(f"scene_{i:04d}" in text for i in range(2))


def test_validated_scenes_are_named_relative_to_their_shared_folder():
    names = _short_names(["/c/corpus/scene_0000/scene.usda", "/c/corpus/scene_0001/scene.usda"])
    assert list(names.values()) == ["scene_0000/scene.usda", "scene_0001/scene.usda"]
