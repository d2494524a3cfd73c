"""``arna``: the Agentic Robotic Navigation Architecture (``papers/arna.txt``).

Modules, each one part of the paper: :mod:`~vlnverse.agents.arna.worldmodel` (the online
scene graph and occupancy grid, Appendix A), :mod:`~vlnverse.agents.arna.tools` (the
toolset, §4.3 and Appendix C), :mod:`~vlnverse.agents.arna.plan` (the plan grammar and its
interpreter: generated plans are data, never Python), :mod:`~vlnverse.agents.arna.memory`
(§4.4), :mod:`~vlnverse.agents.arna.prompts` (Appendix D) and
:mod:`~vlnverse.agents.arna.agent` (workflow generation, the executor of Algorithm 1,
navigation and the §6.3 budgets).
"""

from vlnverse.agents.arna.agent import ARNAAgent
from vlnverse.agents.arna.config import ARNAConfig

__all__ = ["ARNAAgent", "ARNAConfig"]
