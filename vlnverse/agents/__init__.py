"""LLM/VLM navigation agents and the machinery they share.

Shared pieces (each paper's agent is a thin module on them): candidate waypoints from the
agent's own panoramic depth (:mod:`~vlnverse.agents.waypoints`), ``gt`` perception from
the semantic sensor (:mod:`~vlnverse.agents.gt_perception`), a local map from depth
(:mod:`~vlnverse.agents.localmap`), prompt helpers (:mod:`~vlnverse.agents.prompts`),
reply parsing with repair and fallback (:mod:`~vlnverse.agents.parsing`,
:mod:`~vlnverse.agents.base`) and the decision trace (:mod:`~vlnverse.agents.trace`).

Agents (registered in :data:`vlnverse.eval.registry.AGENTS`): ``text_history``,
``text_history_cot`` (:mod:`~vlnverse.agents.text_history`), ``map_history``,
``map_history_cot`` (:mod:`~vlnverse.agents.map_history`), ``discussnav``
(:mod:`~vlnverse.agents.discussnav`), ``dscd_nav`` (:mod:`~vlnverse.agents.dscd_nav`), ``arna``
(:mod:`~vlnverse.agents.arna`).
"""
