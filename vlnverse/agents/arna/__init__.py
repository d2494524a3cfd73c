"""``arna``: the Agentic Robotic Navigation Architecture (``papers/arna.txt``).

Modules, each one part of the paper: :mod:`~vlnverse.agents.arna.worldmodel` (the online
scene graph and occupancy grid, Appendix A), :mod:`~vlnverse.agents.arna.tools` (the
toolset, §4.3 and Appendix C), :mod:`~vlnverse.agents.arna.plan` (the plan grammar and its
interpreter: generated plans are data, never Python), :mod:`~vlnverse.agents.arna.memory`
(§4.4), :mod:`~vlnverse.agents.arna.prompts` (Appendix D) and
:mod:`~vlnverse.agents.arna.agent` (the step loop of Algorithm 1 and how a run ends).

The agent's parts, one job each (:mod:`~vlnverse.agents.arna.state`: the episode's state and
the parts' base): :mod:`~vlnverse.agents.arna.workflow` (workflow generation, §4.5 and
Appendix D.1–D.2), :mod:`~vlnverse.agents.arna.executor` (the executor of Algorithm 1:
step selection, termination and tool choice, Appendix D.3),
:mod:`~vlnverse.agents.arna.memory_update` (memory updates and information selection,
Appendix D.4), :mod:`~vlnverse.agents.arna.perception` (the agent's own perception),
:mod:`~vlnverse.agents.arna.navigation` (driving to a goal on its own map),
:mod:`~vlnverse.agents.arna.briefing` (what the prompts say of the task and the robot),
:mod:`~vlnverse.agents.arna.calls` (the metered model calls) and
:mod:`~vlnverse.agents.arna.budgets` (the §6.3 budgets and failure counts).
"""

from vlnverse.agents.arna.agent import ARNAAgent
from vlnverse.agents.arna.config import ARNAConfig

__all__ = ["ARNAAgent", "ARNAConfig"]
