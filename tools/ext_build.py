"""Build Kit extensions from ``premake.toml`` (the engine behind ``vlnverse ext build``).

For each ``[[extension]]`` of the manifest this assembles ``<output>/<name>/``: links or
copies the listed folders, rewrites the copied ``config/extension.toml`` (python paths
of bundled packages, ``[python.pipapi]`` requirements), and writes a deterministic zip
``<dist>/<name>-<version>.zip`` whose top folder is the extension name. Versions are
checked first: the extension's ``[package].version`` must equal the project version.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from vlnverse.errors import ConfigError, PackagingError

ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: equal inputs give byte-identical zips


@dataclass(frozen=True)
class Entry:
    """One folder or file placed into the built extension."""

    source: str
    target: str
    exclude: tuple[str, ...] = ()
    optional: bool = False


@dataclass(frozen=True)
class ExtensionSpec:
    """One ``[[extension]]`` of the manifest."""

    name: str
    source: str
    links: tuple[Entry, ...] = ()
    copies: tuple[Entry, ...] = ()
    python_paths: tuple[str, ...] = ()
    pip_requirements: tuple[str, ...] = ()
    pip_modules: tuple[str, ...] = ()
    kit_provided: tuple[str, ...] = ()
    kit_unused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """The parsed ``premake.toml``; paths are relative to ``root``."""

    root: Path
    version_source: str
    output: str
    dist: str
    extensions: tuple[ExtensionSpec, ...]


@dataclass
class BuildResult:
    """What one extension build produced."""

    name: str
    version: str
    folder: Path
    zip_path: Path | None
    files: list[str] = field(default_factory=list)


def _table(data: dict, key: str, where: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{key}] must be a table")
    return value


def _check_keys(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}")


def _relative(value: object, where: str) -> str:
    if not isinstance(value, str) or not value or Path(value).is_absolute() or ".." in Path(value).parts:
        raise ConfigError(f"{where}: expected a relative path inside the project, got {value!r}")
    return value


def _entries(items: object, where: str) -> tuple[Entry, ...]:
    if not isinstance(items, list):
        raise ConfigError(f"{where}: expected an array of tables")
    entries = []
    for index, item in enumerate(items):
        spot = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{spot}: expected a table")
        _check_keys(item, {"from", "to", "exclude", "optional"}, spot)
        exclude = item.get("exclude", [])
        if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
            raise ConfigError(f"{spot}.exclude: expected a list of glob patterns")
        entries.append(
            Entry(
                _relative(item.get("from"), f"{spot}.from"),
                _relative(item.get("to"), f"{spot}.to"),
                tuple(exclude),
                bool(item.get("optional", False)),
            )
        )
    return tuple(entries)


def _strings(ext: dict, key: str, where: str) -> tuple[str, ...]:
    value = ext.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}.{key}: expected a list of non-empty strings")
    return tuple(value)


def load_manifest(path: str | Path) -> Manifest:
    """Parse and validate ``premake.toml`` (unknown keys are errors naming the key)."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read build manifest {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    _check_keys(data, {"build", "extension"}, str(path))
    build = _table(data, "build", str(path))
    _check_keys(build, {"version_source", "output", "dist"}, f"{path} [build]")
    raw_extensions = data.get("extension", [])
    if not isinstance(raw_extensions, list) or not raw_extensions:
        raise ConfigError(f"{path}: needs at least one [[extension]]")
    extensions = []
    allowed = {"name", "source", "link", "copy", "python_paths", "pip_requirements", "pip_modules",
               "kit_provided", "kit_unused"}
    for index, ext in enumerate(raw_extensions):
        where = f"{path} extension[{index}]"
        _check_keys(ext, allowed, where)
        name = ext.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*", name):
            raise ConfigError(f"{where}.name: expected a dotted extension name, got {name!r}")
        extensions.append(
            ExtensionSpec(
                name=name,
                source=_relative(ext.get("source"), f"{where}.source"),
                links=_entries(ext.get("link", []), f"{where}.link"),
                copies=_entries(ext.get("copy", []), f"{where}.copy"),
                python_paths=tuple(_relative(p, f"{where}.python_paths") for p in ext.get("python_paths", [])),
                pip_requirements=_strings(ext, "pip_requirements", where),
                pip_modules=_strings(ext, "pip_modules", where),
                kit_provided=_strings(ext, "kit_provided", where),
                kit_unused=_strings(ext, "kit_unused", where),
            )
        )
    return Manifest(
        root=path.parent,
        version_source=_relative(build.get("version_source", "pyproject.toml"), "build.version_source"),
        output=_relative(build.get("output", "_build/exts"), "build.output"),
        dist=_relative(build.get("dist", "_build/dist"), "build.dist"),
        extensions=tuple(extensions),
    )


# --------------------------------------------------------------------------- checks


def project_version(manifest: Manifest) -> str:
    """``[project].version`` of the manifest's version source (pyproject.toml)."""
    path = manifest.root / manifest.version_source
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PackagingError(f"cannot read the version source {path}: {exc}") from exc
    version = data.get("project", {}).get("version")
    if not isinstance(version, str):
        raise PackagingError(f"{path} has no [project].version")
    return version


def extension_config(manifest: Manifest, ext: ExtensionSpec) -> dict:
    """The parsed source ``config/extension.toml`` of ``ext``."""
    path = manifest.root / ext.source / "config" / "extension.toml"
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PackagingError(f"{ext.name}: cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PackagingError(f"{ext.name}: {path} is not valid TOML: {exc}") from exc


def check_versions(manifest: Manifest) -> dict[str, str]:
    """Check every extension's version equals the project's; returns ``{name: version}``.

    Raises:
        PackagingError: A version disagrees (the message names both files and values).
    """
    version = project_version(manifest)
    versions = {}
    for ext in manifest.extensions:
        ext_version = extension_config(manifest, ext).get("package", {}).get("version")
        if ext_version != version:
            raise PackagingError(
                f"version mismatch: {ext.source}/config/extension.toml has {ext_version!r} but "
                f"{manifest.version_source} has {version!r}; make them equal"
            )
        versions[ext.name] = ext_version
    return versions


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def check_requirements(manifest: Manifest) -> None:
    """Check each extension's pip table against the project's core dependencies.

    Every ``pip_requirements`` entry must be a core dependency with an import name in
    ``pip_modules`` (same order), and every core dependency must be listed in exactly one
    of ``pip_requirements`` (installed by Kit), ``kit_provided`` (bundled with Isaac Sim)
    or ``kit_unused`` (never imported inside Kit), so a new dependency cannot be forgotten.

    Raises:
        PackagingError: naming the extension, the entries and what to do.
    """
    data = tomllib.loads((manifest.root / manifest.version_source).read_text(encoding="utf-8"))
    declared = {_requirement_name(d) for d in data.get("project", {}).get("dependencies", [])}
    source = manifest.version_source
    for ext in manifest.extensions:
        missing = [r for r in ext.pip_requirements if _requirement_name(r) not in declared]
        if missing:
            raise PackagingError(f"{ext.name}: pip requirement(s) {', '.join(missing)} are not dependencies in {source}")
        if len(ext.pip_modules) != len(ext.pip_requirements):
            raise PackagingError(
                f"{ext.name}: pip_modules must name the import module of each pip requirement, in the same order "
                f"({len(ext.pip_modules)} modules for {len(ext.pip_requirements)} requirements)"
            )
        groups = {
            "pip_requirements": {_requirement_name(r) for r in ext.pip_requirements},
            "kit_provided": {_requirement_name(r) for r in ext.kit_provided},
            "kit_unused": {_requirement_name(r) for r in ext.kit_unused},
        }
        for name in sorted(declared):
            places = [group for group, names in groups.items() if name in names]
            if not places:
                raise PackagingError(
                    f"{ext.name}: core dependency {name!r} of {source} is missing from pip_requirements "
                    "(or list it under kit_provided / kit_unused)"
                )
            if len(places) > 1:
                raise PackagingError(f"{ext.name}: {name!r} is listed in both {' and '.join(places)}")
        stale = sorted((groups["kit_provided"] | groups["kit_unused"]) - declared)
        if stale:
            raise PackagingError(f"{ext.name}: {', '.join(stale)} listed in kit_provided/kit_unused but not dependencies in {source}")


# --------------------------------------------------------------------------- assembly


def _excluded(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _copy(source: Path, target: Path, exclude: tuple[str, ...], out_root: Path) -> None:
    if not _inside(target.parent, out_root):
        raise PackagingError(f"refusing to write {target}: it resolves outside {out_root} (through a link)")
    if source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        return
    shutil.copytree(
        source,
        target,
        ignore=lambda _dir, names: [n for n in names if _excluded(n, exclude)],
        dirs_exist_ok=True,
    )


def _link(source: Path, target: Path, out_root: Path) -> None:
    if not _inside(target.parent, out_root):
        raise PackagingError(f"refusing to link {target}: it resolves outside {out_root}")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(source, target.parent), target, target_is_directory=source.is_dir())


def rewrite_extension_toml(text: str, ext: ExtensionSpec) -> str:
    """Add the bundled python paths and the pip requirements to an extension.toml text.

    The ``[[python.module]] path`` entries go before the first module so the bundled
    packages are importable when Kit imports the extension's own module.
    """
    paths = "".join(f'[[python.module]]\npath = "{p}"\n\n' for p in ext.python_paths)
    marker = text.find("[[python.module]]")
    if paths:
        text = text + "\n" + paths if marker < 0 else text[:marker] + paths + text[marker:]
    if ext.pip_requirements:
        # omni.kit.pipapi: `modules` are imported to decide whether pip must run at all (see
        # premake.toml); without use_online_index the requirements are skipped entirely.
        requirements = ", ".join(f'"{r}"' for r in ext.pip_requirements)
        modules = ", ".join(f'"{m}"' for m in ext.pip_modules)
        text = (
            text.rstrip("\n")
            + "\n\n[python.pipapi]\n"
            + f"requirements = [{requirements}]\n"
            + f"modules = [{modules}]\n"
            + "use_online_index = true\n"
        )
    tomllib.loads(text)  # the result must stay valid TOML
    return text


def _zip(folder: Path, zip_path: Path) -> list[str]:
    """Zip ``folder`` (following links) as ``<folder name>/...``; returns the member names."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    files = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".pyc"):
                continue
            files.append(Path(dirpath) / name)
    members = []
    tmp = zip_path.with_name(f".{zip_path.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files, key=lambda p: p.relative_to(folder).as_posix()):
            arcname = f"{folder.name}/{path.relative_to(folder).as_posix()}"
            info = zipfile.ZipInfo(arcname, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
            members.append(arcname)
    os.replace(tmp, zip_path)
    return members


def build_extension(
    manifest: Manifest, ext: ExtensionSpec, *, copy_links: bool = False, make_zip: bool = True
) -> BuildResult:
    """Assemble one extension under the output folder (replacing an earlier build)."""
    version = check_versions(manifest)[ext.name]
    out_root = (manifest.root / manifest.output).resolve()
    folder = out_root / ext.name
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)

    for entry in ext.links + ext.copies:
        source = manifest.root / entry.source
        if not source.exists():
            if entry.optional:
                continue
            raise PackagingError(f"{ext.name}: {entry.source} does not exist")
        target = folder / entry.target
        if entry in ext.links and not copy_links:
            _link(source.resolve(), target, out_root)
        else:
            _copy(source, target, entry.exclude, out_root)

    config = folder / "config" / "extension.toml"
    if config.is_symlink() or not config.is_file():
        raise PackagingError(f"{ext.name}: config/extension.toml must be copied, not linked")
    config.write_text(rewrite_extension_toml(config.read_text(encoding="utf-8"), ext), encoding="utf-8")

    files = sorted(
        p.relative_to(folder).as_posix()
        for p in _walk_files(folder)
    )
    zip_path = None
    if make_zip:
        zip_path = (manifest.root / manifest.dist / f"{ext.name}-{version}.zip").resolve()
        _zip(folder, zip_path)
    return BuildResult(ext.name, version, folder, zip_path, files)


def _walk_files(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found.extend(Path(dirpath) / n for n in filenames if not n.endswith(".pyc"))
    return found


def build_all(
    manifest_path: str | Path,
    *,
    names: tuple[str, ...] = (),
    copy_links: bool = False,
    make_zip: bool = True,
) -> list[BuildResult]:
    """Build the manifest's extensions (all, or those in ``names``) after all checks pass."""
    manifest = load_manifest(manifest_path)
    known = {ext.name for ext in manifest.extensions}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ConfigError(f"unknown extension(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    check_versions(manifest)
    check_requirements(manifest)
    return [
        build_extension(manifest, ext, copy_links=copy_links, make_zip=make_zip)
        for ext in manifest.extensions
        if not names or ext.name in names
    ]
