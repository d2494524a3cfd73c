"""``vlnverse ext``: build and check the Isaac Sim extension (from ``premake.toml``).

The build engine lives in the checkout's ``tools/ext_build.py`` (a developer tool, not
part of the installed library), so these commands run inside a source checkout: the
manifest is ``--manifest``, else the first ``premake.toml`` found from the current
folder upwards, else the one beside the imported ``vlnverse`` package.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import vlnverse
from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import PackagingError

MANIFEST = "premake.toml"


def find_manifest(explicit: str | None = None, start: Path | None = None) -> Path:
    """The build manifest to use (see the module docs)."""
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if not path.is_file():
            raise PackagingError(f"build manifest {path} does not exist")
        return path
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MANIFEST).is_file():
            return folder / MANIFEST
    beside_package = Path(vlnverse.__file__).resolve().parents[1] / MANIFEST
    if beside_package.is_file():
        return beside_package
    raise PackagingError(
        f"no {MANIFEST} found from {here} upwards; run inside a VLNVerse checkout or pass --manifest"
    )


def load_build_tool(manifest: Path) -> ModuleType:
    """Import ``tools/ext_build.py`` of the checkout that holds ``manifest``."""
    path = manifest.parent / "tools" / "ext_build.py"
    if not path.is_file():
        raise PackagingError(f"{path} is missing; the extension build tool ships with the checkout")
    spec = importlib.util.spec_from_file_location("vlnverse_tools_ext_build", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _build(args: argparse.Namespace) -> int:
    manifest = find_manifest(args.manifest)
    tool = load_build_tool(manifest)
    results = tool.build_all(
        manifest, names=tuple(args.name or ()), copy_links=args.copy, make_zip=not args.no_zip
    )
    rows = [
        {
            "name": r.name,
            "version": r.version,
            "folder": str(r.folder),
            "zip": str(r.zip_path) if r.zip_path else None,
            "files": len(r.files),
        }
        for r in results
    ]
    if args.json:
        print_json({"manifest": str(manifest), "extensions": rows})
    else:
        print_table(
            "built extensions",
            ["name", "version", "folder", "zip", "files"],
            [[r["name"], r["version"], r["folder"], r["zip"] or "-", r["files"]] for r in rows],
        )
        print(f"load with: --ext-folder {results[0].folder.parent} --enable {results[0].name}")
    return 0


def _check(args: argparse.Namespace) -> int:
    manifest_path = find_manifest(args.manifest)
    tool = load_build_tool(manifest_path)
    manifest = tool.load_manifest(manifest_path)
    versions = tool.check_versions(manifest)
    tool.check_requirements(manifest)
    project = tool.project_version(manifest)
    if args.json:
        print_json({"project_version": project, "extensions": versions, "ok": True})
    else:
        print_table(
            f"extension versions (project {project})",
            ["extension", "version"],
            sorted(versions.items()),
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``vlnverse ext build|check``."""
    parser = subparsers.add_parser("ext", help="build and check the Isaac Sim extension")
    commands = parser.add_subparsers(dest="ext_command", metavar="SUBCOMMAND")

    build = commands.add_parser("build", help="assemble ready-to-load extensions and zips")
    build.add_argument("--manifest", help=f"build manifest (default: nearest {MANIFEST})")
    build.add_argument("--name", action="append", help="build only this extension (repeatable)")
    build.add_argument("--copy", action="store_true", help="copy the manifest's links instead")
    build.add_argument("--no-zip", action="store_true", help="skip the distribution zip")
    build.add_argument("--json", action="store_true", help="print one JSON object")
    build.set_defaults(handler=_build)

    check = commands.add_parser("check", help="check extension and project versions agree")
    check.add_argument("--manifest", help=f"build manifest (default: nearest {MANIFEST})")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_check)
