"""Task & dataset layer (paper §3.3): episodes of the five tasks, path sampling,
instruction generation (prior templates + Describer/Verifier/Synthesizer), dataset
storage and formats, dialogue oracles and headless dataset generation.

The env-facing API is :class:`~vlnverse.tasks.dataset.EpisodeDataset` (open a dataset,
select a split and task, iterate episodes), :class:`~vlnverse.tasks.runtime.SubgoalTracker`
(long-horizon sub-goal activation on STOP) and :class:`~vlnverse.tasks.runtime.DialogueSession`
(the ``ask`` action's oracle with a question budget).
"""

from vlnverse.tasks.episode import SPLITS, STYLES, TASKS, Episode, Goal, Instruction, Provenance

__all__ = ["SPLITS", "STYLES", "TASKS", "Episode", "Goal", "Instruction", "Provenance"]
