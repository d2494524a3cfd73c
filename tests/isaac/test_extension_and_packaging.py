"""The Kit extension's layout and manifest, and `vlnverse ext build` through the real CLI."""

from __future__ import annotations

import json
import py_compile
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "exts" / "vlnverse.isaac"
KNOWN_NAMES = {
    line.strip()
    for line in (Path(__file__).parent / "data" / "isaacsim_5_1_0_extension_names.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}


def _config() -> dict:
    return tomllib.loads((EXT / "config" / "extension.toml").read_text())


def test_extension_toml_parses_and_names_existing_modules():
    config = _config()
    package = config["package"]
    for key in ("version", "title", "description", "category", "readme", "changelog", "icon", "preview_image"):
        assert package[key], key
    for key in ("readme", "changelog", "icon", "preview_image"):
        assert (EXT / package[key]).is_file(), package[key]
    modules = [m["name"] for m in config["python"]["module"] if "name" in m]
    assert modules[0] == "vlnverse_isaac"
    for name in modules:
        folder = EXT / Path(*name.split("."))
        assert (folder / "__init__.py").is_file(), name
    init = (EXT / "vlnverse_isaac" / "__init__.py").read_text()
    assert "VLNVerseExtension" in init
    extension = (EXT / "vlnverse_isaac" / "extension.py").read_text()
    assert "class VLNVerseExtension(omni.ext.IExt)" in extension
    settings = config["settings"]["exts"]["vlnverse.isaac"]
    assert set(settings) == {"scenes_folder", "corpus_folder", "dataset_path", "recordings_folder", "physics_mode"}
    assert settings["physics_mode"] in ("strict", "slide", "tel_hop")


def test_dependencies_are_isaac_sim_5_extension_names():
    dependencies = _config()["dependencies"]
    assert dependencies, "the extension depends on Isaac Sim extensions"
    unknown = sorted(set(dependencies) - KNOWN_NAMES)
    assert unknown == []
    # Names from before Isaac Sim 4.5 (omni.isaac.*) are not used.
    assert not [d for d in dependencies if d.startswith("omni.isaac.")]
    for test in _config().get("test", []):
        assert set(test.get("dependencies", [])) <= KNOWN_NAMES


def test_every_extension_module_compiles(tmp_path):
    sources = sorted((EXT / "vlnverse_isaac").rglob("*.py"))
    assert len(sources) >= 4
    for source in sources:
        py_compile.compile(str(source), cfile=str(tmp_path / (source.stem + ".pyc")), doraise=True)


def test_extension_modules_import_kit_only_inside_functions_or_at_extension_entry():
    """Library code stays importable without Kit: only the extension imports omni at top."""
    for path in (ROOT / "vlnverse").rglob("*.py"):
        for line in path.read_text().splitlines():
            assert not line.startswith(("import omni", "from omni", "import isaacsim", "from isaacsim")), path


def test_icon_and_preview_are_real_pngs():
    assert Image.open(EXT / "data" / "icon.png").size == (256, 256)
    assert Image.open(EXT / "data" / "preview.png").size == (1024, 512)


def _copy_checkout(tmp_path: Path) -> Path:
    """A minimal copy of the checkout (manifest, tool, extension, package, pyproject)."""
    root = tmp_path / "checkout"
    for name in ("premake.toml", "pyproject.toml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "tools", root / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXT, root / "exts" / "vlnverse.isaac", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "vlnverse", root / "vlnverse", ignore=shutil.ignore_patterns("__pycache__"))
    scenes = root / "assets" / "scenes"
    scenes.mkdir(parents=True)
    (scenes / "tiny.usda").write_text('#usda 1.0\n(\n    defaultPrim = "World"\n)\n\ndef Xform "World"\n{\n}\n')
    return root


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vlnverse", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_ext_build_writes_loadable_extension_and_zip(tmp_path):
    root = _copy_checkout(tmp_path)
    result = _cli("ext", "build", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (built,) = report["extensions"]
    assert built["name"] == "vlnverse.isaac" and built["version"] == "0.1.0"
    folder = root / "_build" / "exts" / "vlnverse.isaac"
    assert Path(built["folder"]) == folder
    # Layout: linked sources, copied config/data, the library on the extension's path.
    assert (folder / "vlnverse_isaac").is_symlink() and (folder / "docs").is_symlink()
    assert not (folder / "config").is_symlink() and not (folder / "data").is_symlink()
    assert (folder / "pip_prebundle" / "vlnverse" / "sim" / "backends" / "isaac.py").is_file()
    assert (folder / "data" / "scenes" / "tiny.usda").is_file()
    assert not list(folder.rglob("__pycache__"))
    config = tomllib.loads((folder / "config" / "extension.toml").read_text())
    modules = config["python"]["module"]
    assert modules[0] == {"path": "pip_prebundle"} and modules[1]["name"] == "vlnverse_isaac"
    pipapi = config["python"]["pipapi"]
    requirements = pipapi["requirements"]
    assert "diskcache>=5.6" in requirements and not any(r.startswith("usd-core") for r in requirements)
    # Isaac Sim bundles these; pipapi would otherwise reinstall them over its own copies.
    assert not any(r.split(">")[0] in ("scipy", "pyyaml", "networkx", "numba") for r in requirements)
    # One import name per requirement, so pipapi's import check can skip pip once installed.
    assert len(pipapi["modules"]) == len(requirements) and pipapi["use_online_index"] is True
    assert dict(zip(requirements, pipapi["modules"], strict=True))["scikit-image>=0.22"] == "skimage"
    # The sources were not modified through the links.
    assert "pip_prebundle" not in (root / "exts" / "vlnverse.isaac" / "config" / "extension.toml").read_text()

    zip_path = root / "_build" / "dist" / "vlnverse.isaac-0.1.0.zip"
    assert Path(built["zip"]) == zip_path
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        assert archive.testzip() is None
        zipped_config = tomllib.loads(archive.read("vlnverse.isaac/config/extension.toml").decode())
    for member in (
        "vlnverse.isaac/config/extension.toml",
        "vlnverse.isaac/data/icon.png",
        "vlnverse.isaac/docs/README.md",
        "vlnverse.isaac/vlnverse_isaac/extension.py",
        "vlnverse.isaac/vlnverse_isaac/window.py",
        "vlnverse.isaac/pip_prebundle/vlnverse/__init__.py",
        "vlnverse.isaac/data/scenes/tiny.usda",
    ):
        assert member in names, member
    assert all(name.startswith("vlnverse.isaac/") for name in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert zipped_config == config

    first = zip_path.read_bytes()
    again = _cli("ext", "build", "--json", "--copy", cwd=root)
    assert again.returncode == 0, again.stderr
    assert not (folder / "vlnverse_isaac").is_symlink()  # --copy materializes the links
    assert zip_path.read_bytes() == first  # deterministic zip


def test_version_mismatch_fails_the_build(tmp_path):
    root = _copy_checkout(tmp_path)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"', 1))
    for command in (("ext", "check"), ("ext", "build")):
        result = _cli(*command, cwd=root)
        assert result.returncode == 2
        assert "version mismatch" in result.stderr and "0.2.0" in result.stderr and "0.1.0" in result.stderr
    assert not (root / "_build" / "exts" / "vlnverse.isaac").exists()


def test_ext_check_reports_agreeing_versions(tmp_path):
    root = _copy_checkout(tmp_path)
    result = _cli("ext", "check", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "extensions": {"vlnverse.isaac": "0.1.0"},
        "ok": True,
        "project_version": "0.1.0",
    }


def test_repository_versions_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _config()["package"]["version"] == project


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('output = "_build/exts"', 'output = "/abs/path"'), "relative path"),
        (lambda t: t + '\n[surprise]\nkey = 1\n', "unknown key(s) surprise"),
        (lambda t: t.replace('"rich>=13",', '"not-a-dependency>=1",'), "not dependencies"),
        (lambda t: t.replace('  "diskcache>=5.6",\n', "").replace(', "diskcache"]', "]"),
         "core dependency 'diskcache' of pyproject.toml is missing from pip_requirements"),
        (lambda t: t.replace(', "diskcache"]', "]"), "same order (8 modules for 9 requirements)"),
        (lambda t: t.replace('kit_unused = ["pybullet"', 'kit_unused = ["scipy", "pybullet"'),
         "'scipy' is listed in both kit_provided and kit_unused"),
    ],
)
def test_bad_manifests_are_rejected_with_a_clear_error(tmp_path, edit, message):
    root = _copy_checkout(tmp_path)
    manifest = root / "premake.toml"
    manifest.write_text(edit(manifest.read_text()))
    result = _cli("ext", "build", cwd=root)
    assert result.returncode == 2 and message in result.stderr
