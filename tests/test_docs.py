"""The documentation: the site builds strictly, and every code block of the README and the
pages runs (see :mod:`tests.docs_blocks` for how blocks are run or marked)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bundled import REPO
from tests.docs_blocks import LANGUAGES, Block, code_blocks, indented_code

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
#: The dataset every page's examples use, made once as the Getting started page makes it.
DATASET_COMMAND = "vlnverse datagen --scenes assets/scenes --out data/ds --per-scene 2"
SHELL_TIMEOUT_S = 300
#: Where ``make`` installs the project, as the README's quickstart says.
VENV_BIN = Path(".venv") / "bin"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``make docs``: the site built strictly; broken links, missing pages or anchors and unresolved
    API references fail the build."""
    site_dir = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return site_dir


@pytest.mark.slow
def test_the_site_builds_strictly(site):
    assert (site / "own-agent.html").is_file()


def test_every_link_of_the_built_site_opens_a_file(site):
    """``make docs`` says to open ``_build/site/index.html`` from disk, where a link to a folder
    shows a directory listing: every relative ``href``/``src`` must name a file that exists."""
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")  # a web server's page: root-absolute
    broken = [f"{page.relative_to(site)} -> {link}" for page in pages for link in local_links(page)
              if not (page.parent / link).is_file()]
    assert len(pages) > 10 and broken == []


def test_the_site_shows_no_sphinx_role_nor_path_outside_the_repository(site):
    """Docstrings' ``:func:``/``:class:`` roles render as code, and no page cites the workspace's
    ``shared/`` folder, which a clone does not have."""
    pages = {page.relative_to(site): page.read_text() for page in site.rglob("*.html")}
    roles = {str(name) for name, text in pages.items() if re.search(r":(func|class|mod|meth|attr):<code>", text)}
    outside = {str(name) for name, text in pages.items() if re.search(r"\bshared/(reference|papers)", text)}
    assert "<code>compute_episode_metrics</code>" in pages[Path("evaluation.html")]
    assert roles == set() and outside == set()


def local_links(page: Path) -> list[str]:
    """The relative links of an HTML page, without query or fragment."""
    links = re.findall(r'(?:href|src)="([^"]*)"', page.read_text())
    return [link for link in (re.split(r"[?#]", link)[0] for link in links)
            if link and not re.match(r"^[a-z][a-z0-9+.-]*:|^//", link)]


def test_readme_links_resolve():
    """The README is not part of the site: its relative links are checked here."""
    text = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text)
    assert targets and [t for t in targets if not (REPO / t).exists()] == []
    assert len(text.splitlines()) < 200


def test_the_readme_names_every_extra_make_test_installs():
    extras = re.search(r"^EXTRAS \?= (\S+)$", (REPO / "Makefile").read_text(), re.MULTILINE)[1].split(",")
    tests_section = (REPO / "README.md").read_text().split("\n## Tests\n", 1)[1]
    assert extras and [e for e in extras if f"`{e}`" not in tests_section] == []


def test_the_results_page_names_every_published_table():
    """A shipped agent's table or a results page of the docs that the Results page does not list
    is a number nobody will find."""
    listed = (DOCS / "results.md").read_text()
    tables = [str(p.relative_to(REPO)) for folder in ("agents", "tracks")
              for p in (REPO / "assets" / folder).glob("*/table*.md")]
    pages = [p.name for p in DOCS.glob("results-*.md")]
    assert tables and pages and [name for name in tables + pages if name not in listed] == []


def test_the_dataset_shape_table_is_what_datagen_makes():
    """``docs/datasets.md``'s table of what ``--per-scene N`` makes, against the generator's counts."""
    from vlnverse.tasks.generate import COARSE_FAMILY, GenerationConfig

    lines = (DOCS / "datasets.md").read_text().split("### What `--per-scene N` makes", 1)[1].splitlines()
    table = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.startswith("| ")]
    header, rows = table[0], {cells[0]: cells for cells in table[1:]}
    assert f"N = {GenerationConfig().per_scene} (default)" in header
    for column, name in enumerate(header):
        if name.startswith("N = "):
            counts = GenerationConfig(per_scene=int(name.split()[2])).counts()
            expected = {"fine": counts["fine"], "long_horizon": counts["long_horizon"],
                        **dict.fromkeys(COARSE_FAMILY, counts["coarse"])}
            assert {task: int(rows[task][column]) for task in expected} == expected, name


AGENT_CONFIGS = [block for page in PAGES for block in code_blocks(page) if block.agent is not None]


def _field_defaults(config_class) -> dict:
    """The default of every field of a config dataclass that has one."""
    import dataclasses

    defaults = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
                for f in dataclasses.fields(config_class)
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    return {name: list(value) if isinstance(value, tuple) else value for name, value in defaults.items()}  # YAML lists


@pytest.mark.parametrize("block", AGENT_CONFIGS, ids=lambda b: b.where)
def test_an_example_agent_config_shows_the_defaults_or_says_why_not(block):
    """A reader copies the example: a value that is not the agent's default says so on its line."""
    from vlnverse.eval.registry import agent_factory

    defaults = _field_defaults(agent_factory(block.agent).config_class)
    lines = {line.split(":", 1)[0]: line for line in block.code.splitlines() if line[:1].isalpha()}
    for key, value in yaml.safe_load(block.code).items():
        if key not in defaults:
            continue  # a required setting (a remote policy's url) has no default to show
        default = defaults[key]
        pairs = [(getattr(default, k), v) for k, v in value.items()] if isinstance(value, dict) else [(default, value)]
        if any(d != pytest.approx(v, rel=1e-3) if isinstance(v, float) else d != v for d, v in pairs):
            assert "not the default" in lines[key], f"{block.where}: {key}: {value!r}, default {default!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_block_is_fenced_with_a_known_language(page):
    assert indented_code(page) == [], f"{page.name}: indented code blocks (fence them) at lines {indented_code(page)}"
    for block in code_blocks(page):
        assert block.language in LANGUAGES, f"{block.where}: language {block.language!r} not one of {LANGUAGES}"
        if block.not_run is not None:
            assert len(block.not_run) > 10, f"{block.where}: say why the block is not run"


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Path:
    """A folder laid out as a user's checkout after ``make`` (``assets``, ``datagen``, a ``.venv``
    whose ``vlnverse`` runs this checkout) with ``data/ds`` made and that ``.venv`` on ``PATH``."""
    root = tmp_path_factory.mktemp("docs-workspace")
    for name in ("assets", "datagen"):
        (root / name).symlink_to(REPO / name)
    bin_dir = root / VENV_BIN
    bin_dir.mkdir(parents=True)
    shim = bin_dir / "vlnverse"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m vlnverse "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    _shell(DATASET_COMMAND, root)
    return root


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{root / VENV_BIN}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def _shell(code: str, root: Path) -> str:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=root, env=_env(root), capture_output=True,
                          text=True, timeout=SHELL_TIMEOUT_S)
    assert done.returncode == 0, f"{code}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _run(block: Block, namespace: dict, root: Path) -> None:
    if block.title is not None:
        (root / block.title).parent.mkdir(parents=True, exist_ok=True)
        (root / block.title).write_text(block.code)
        if block.language == "python":
            return  # the page imports it, as a user would
    if block.language == "python":
        exec(compile(block.code, f"{block.where}", "exec"), namespace)  # noqa: S102 - the page's own example
    elif block.language == "bash":
        _shell(block.code, root)
    elif block.language == "yaml":
        data = yaml.safe_load(block.code)
        assert isinstance(data, dict), f"{block.where}: not a YAML mapping"
        if block.agent is not None:  # the page's agent config, checked as --agent-config would be
            from vlnverse.config import config_from_mapping
            from vlnverse.eval.registry import agent_factory

            config_from_mapping(agent_factory(block.agent).config_class, data, where=f"{block.where}")
    elif block.language == "json":
        json.loads(block.code)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if any(b.language != "text" for b in code_blocks(p))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_the_code_blocks_of_a_page_run(page, workspace, monkeypatch):
    """A page's blocks in order, in the workspace; ``python`` blocks share one namespace."""
    if page.name == "getting-started.md":
        assert DATASET_COMMAND in page.read_text()  # the workspace's dataset is the page's
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(sys, "path", [str(workspace), *sys.path])
    monkeypatch.setenv("PATH", _env(workspace)["PATH"])
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for block in code_blocks(page):
        if block.language != "text" and block.not_run is None:
            _run(block, namespace, workspace)
