"""What a run says about itself, against what can be derived, and what stays a claim.

A result table shows a run's agent, label and privileged inputs beside its figures. The label
must be the agent's own name and the privileged inputs those the registered agent reads with
its recorded config (:func:`claim_problems`); nothing else about the agent is derived from
``run.json``. :func:`verdict` sorts what a verification proved from what it only reports
(the model that wrote a transcript, an agent config nobody re-ran, a seed nobody stated).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vlnverse.config import config_from_mapping
from vlnverse.errors import ConfigError
from vlnverse.eval.verification.submission import RUN_FILE, RecordedRun


def claim_problems(run: RecordedRun) -> list[str]:
    """Where ``run.json``'s label and privileged inputs are not what its agent and config give."""
    from vlnverse.eval.registry import AGENTS, agent_label, augmented_label

    problems = []
    label = run.raw.get("label")
    training = run.raw.get("training_data")
    served = run.raw.get("served_agent")
    expected = augmented_label(agent_label(run.agent, served if isinstance(served, str) else None),
                               training if isinstance(training, Mapping) else None)
    if label != expected:
        problems.append(f"{RUN_FILE} label {str(label)[:80]!r} is not the agent's name {expected!r} "
                        "(a table row is named by its agent, '+aug' when its model trained on augmentation homes "
                        "or started from pretrained encoders)")
    if run.agent not in AGENTS or ":" in run.agent:
        return problems
    factory = AGENTS.get(run.agent)
    config_class = getattr(factory, "config_class", None)
    try:
        settings = config_from_mapping(config_class, run.agent_config, where=f"{RUN_FILE} agent_config") \
            if config_class else None
    except ConfigError as exc:
        return [*problems, str(exc)]
    privileged = getattr(settings, "privileged", None)
    derived = sorted(getattr(factory, "privileged", ()) if privileged is None else privileged)
    recorded = run.raw.get("privileged")
    if recorded != derived:
        problems.append(f"{RUN_FILE} privileged {json.dumps(recorded)[:80]}: {run.agent} with its agent config reads "
                        f"{json.dumps(derived)}")
    return problems


def verdict(run: RecordedRun, checks: Mapping[str, str], *, seed_stated: bool, trace_pinned: bool,
            transcript: bool) -> tuple[list[str], list[str]]:
    """``(proven, reported only)``: what a passed verification of ``run`` shows, and what it takes
    on ``run.json``'s word."""
    from vlnverse.eval.registry import AGENTS
    from vlnverse.eval.scoring.episode_record import MetricsConfig, trace_metric_settings

    config = _shown_config(run.agent_config)
    privileged = json.dumps(run.raw.get("privileged"))
    proven = ["the results are what the recorded actions give on your dataset and scenes, for every selected "
              "episode, and the summaries are the records'"]
    reported = []
    if run.agent in AGENTS and ":" not in run.agent:
        proven.append(f"the label is the agent's name and the privileged inputs {privileged} are those "
                      f"{run.agent} reads with its recorded agent config")
    else:
        reported.append(f"the privileged inputs {privileged[:80]} (not derived for an agent outside this package)")
    if run.raw.get("served_agent") is not None:
        reported.append("the served agent's name (the policy server's metadata)")
    if run.raw.get("training_data") is not None:
        reported.append("what the model trained on (its checkpoint's training_data"
                        + (", the re-run checkpoint's" if "rerun" in checks else "") + ")")
    if "rerun" not in checks:
        reported.append(f"which agent chose the actions (run.json: {run.agent}{config}); see --rerun")
    elif transcript:
        proven.append(f"the actions follow from this transcript, replayed to {run.agent}{config}")
        model = run.raw.get("llm")
        named = f"run.json: {model.get('backend')}:{model.get('target')}" if isinstance(model, Mapping) \
            else "run.json names none"
        reported.append(f"which model wrote the transcript ({named[:120]}), and so its token usage and cost")
    else:
        proven.append(f"{run.agent}{config} re-run with seed {run.seed} takes every recorded action")
    if not seed_stated:
        reported.append(f"the seed ({run.seed}, run.json's: a best run of several seeds is not excluded; state "
                        "--seed or --track)")
    if not trace_pinned and run.trace_metrics != trace_metric_settings(MetricsConfig()):
        changed = {k: v for k, v in run.trace_metrics.items() if trace_metric_settings(MetricsConfig()).get(k) != v}
        reported.append(f"trace-metric parameters not the defaults ({json.dumps(changed)[:120]}): AORI and the "
                        "debate metrics are not comparable with a default run's")
    return proven, reported


def _shown_config(config: Mapping[str, Any]) -> str:
    """`` with agent config {...}`` (``""`` when empty); weights files are named by the checksums."""
    shown = {k: v for k, v in config.items() if not (k == "checkpoint" or k.endswith("_checkpoint"))}
    return f" with agent config {json.dumps(shown, sort_keys=True)[:200]}" if shown else ""
