"""ARNA's textual memory (paper §4.4, Appendix D.4): the model-written description and lists,
plus the automatically kept action log. The rasterized part (the occupancy grid with
landmarks) is drawn from the scene graph when a prompt needs it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

FIELDS = ("updated_description", "list_of_spaces", "list_of_entrances", "list_of_critical_findings",
          "list_of_important_image_ids", "prior_trajectory")
LOG_WINDOW = 12


@dataclass
class Memory:
    """The agent's memory of one episode."""

    fields: dict[str, str] = field(default_factory=lambda: dict.fromkeys(FIELDS, ""))
    action_log: list[str] = field(default_factory=list)
    updates: int = 0

    def update(self, reply: Mapping[str, str]) -> None:
        """Take the fields of a MemoryUpdate answer (empty ones keep the old text)."""
        for key in FIELDS:
            value = str(reply.get(key, "") or "").strip()
            if value:
                self.fields[key] = value
        self.updates += 1

    def log(self, entry: str) -> None:
        self.action_log.append(entry)

    def render(self, window: int = LOG_WINDOW) -> str:
        """The memory as the prompts show it."""
        lines = [f"{key.replace('_', ' ').capitalize()}: {value}" for key, value in self.fields.items() if value]
        shown = self.action_log[-window:]
        if len(self.action_log) > len(shown):
            lines.append(f"Action log ({len(self.action_log) - len(shown)} earlier entries not shown):")
        else:
            lines.append("Action log:")
        lines += [f"- {entry}" for entry in shown] or ["- (nothing yet)"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {"fields": dict(self.fields), "action_log": list(self.action_log), "updates": self.updates}
