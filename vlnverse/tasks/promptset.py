"""Loading and filling the editable prompt files (defaults ship in ``vlnverse/tasks/prompts``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from vlnverse.errors import ConfigError

PROMPT_NAMES = ("describer_coarse", "describer_fine", "verifier_coarse", "verifier_fine",
                "synthesizer_coarse", "synthesizer_fine", "oracle")


@dataclass(frozen=True)
class PromptSet:
    """The prompt templates by name, and where each came from."""

    templates: dict[str, str]
    sources: dict[str, str]

    @classmethod
    def load(cls, directory: str | Path | None = None) -> PromptSet:
        """The default prompts, with any ``<name>.txt`` in ``directory`` replacing its default.

        Raises:
            ConfigError: ``directory`` does not exist, holds an unknown ``.txt`` name, or a
                template is malformed.
        """
        package = resources.files("vlnverse.tasks") / "prompts"
        templates = {name: (package / f"{name}.txt").read_text(encoding="utf-8") for name in PROMPT_NAMES}
        sources = {name: "default" for name in PROMPT_NAMES}
        if directory is not None:
            folder = Path(directory)
            if not folder.is_dir():
                raise ConfigError(f"prompts directory {folder} does not exist")
            for path in sorted(folder.glob("*.txt")):
                if path.stem not in PROMPT_NAMES:
                    raise ConfigError(f"unknown prompt file {path.name}; valid names: "
                                      + ", ".join(f"{n}.txt" for n in PROMPT_NAMES))
                templates[path.stem] = path.read_text(encoding="utf-8")
                sources[path.stem] = str(path)
        for name, text in templates.items():
            try:
                Template(text).get_identifiers()
            except ValueError as exc:
                raise ConfigError(f"prompt {name} ({sources[name]}): {exc}") from exc
            if not Template(text).is_valid():
                raise ConfigError(f"prompt {name} ({sources[name]}) has an invalid placeholder; write $$ for a dollar sign")
        return cls(templates, sources)

    def render(self, name: str, **values: object) -> str:
        """Fill template ``name``.

        Raises:
            ConfigError: a placeholder of the template has no value.
        """
        try:
            return Template(self.templates[name]).substitute({k: str(v) for k, v in values.items()}).strip()
        except KeyError as exc:
            raise ConfigError(f"prompt {name} ({self.sources[name]}) uses ${{{exc.args[0]}}}, "
                              f"which is not provided; available: {', '.join(sorted(values))}") from None

    @property
    def digest(self) -> str:
        """Short hash of all templates (recorded in provenance)."""
        joined = "\0".join(f"{n}\0{self.templates[n]}" for n in PROMPT_NAMES)
        return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:12]
