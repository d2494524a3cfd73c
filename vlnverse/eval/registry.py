"""Agents by name: the baselines, anything registered later, or a ``module:attr`` path.

An entry is an :class:`~vlnverse.eval.agent.Agent` subclass (or any factory). When it has
a ``config_class`` (a frozen dataclass), the agent config (``--agent-config`` file) is
built into it strictly, so a misspelt key is an error naming the key::

    agent = make_agent("random", {"stop_probability": 0.05})
    agent = make_agent("my_pkg.agents:MyAgent")      # no registration needed
    agent = make_agent("agents/my_agent.py:MyAgent") # a file, relative to the current folder
    agent = make_agent("my_pkg.agents:policy")       # a function f(observation) -> action
    agent = make_agent("ws://127.0.0.1:8000")        # a policy server (the ``remote`` agent)

A ``module:attr`` that is an agent or policy object, or a function of one argument (the
observation), is used as it is; a class or a zero-argument function is a factory.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlnverse.config import config_from_mapping, read_config_mapping
from vlnverse.errors import ConfigError
from vlnverse.eval.agent import Agent, as_agent
from vlnverse.redact import redact
from vlnverse.registry import Registry, load_user_entry_point

AGENTS: Registry = Registry("agent")
REMOTE_SCHEMES = ("ws://", "wss://")
"""An agent name starting with one of these is a policy server's URL (the ``remote`` agent)."""
AGENTS.register("random", "vlnverse.eval.baselines:RandomAgent")
AGENTS.register("forward", "vlnverse.eval.baselines:ForwardAgent")
AGENTS.register("oracle", "vlnverse.eval.baselines:OracleAgent")
AGENTS.register("replay", "vlnverse.eval.replay:ReplayAgent")
AGENTS.register("remote", "vlnverse.agents.remote.client:RemoteAgent")
AGENTS.register("text_history", "vlnverse.agents.text_history:TextHistoryAgent")
AGENTS.register("text_history_cot", "vlnverse.agents.text_history:TextHistoryCoTAgent")
AGENTS.register("map_history", "vlnverse.agents.map_history:MapHistoryAgent")
AGENTS.register("map_history_cot", "vlnverse.agents.map_history:MapHistoryCoTAgent")
AGENTS.register("discussnav", "vlnverse.agents.discussnav:DiscussNavAgent")
AGENTS.register("dscd_nav", "vlnverse.agents.dscd_nav:DSCDNavAgent")
AGENTS.register("arna", "vlnverse.agents.arna:ARNAAgent")
AGENTS.register("seq2seq", "vlnverse.learning.agent:Seq2SeqAgent")
AGENTS.register("cma", "vlnverse.learning.agent:CMAAgent")
AGENTS.register("gama", "vlnverse.learning.agent:GamaAgent")
AGENTS.register("waypoint_bert", "vlnverse.learning.online.agent:WaypointBertAgent")


def register_agent(name: str, entry: Any, *, overwrite: bool = False) -> None:
    """Make ``name`` an agent every command and :func:`make_agent` accept: ``entry`` is an
    :class:`~vlnverse.eval.agent.Agent` subclass, a factory or a lazy ``"module:attr"``
    string (a :class:`~vlnverse.errors.RegistryError` if the name is taken, unless ``overwrite``)."""
    AGENTS.register(name, entry, overwrite=overwrite)


def agent_factory(name: str) -> Any:
    """The class/factory registered as ``name``, or imported when ``name`` is ``module:attr``
    or ``path/to/file.py:attr`` (a module is also looked for in the current folder)."""
    if name.startswith(REMOTE_SCHEMES):
        return AGENTS.get("remote")
    if ":" in name and name not in AGENTS:
        return load_user_entry_point(name)
    return AGENTS.get(name)


def agent_label(name: str, served: str | None = None) -> str:
    """The agent's name in tables and pages: ``path/to/file.py:MyAgent`` and ``module:MyAgent``
    are named ``MyAgent``, a registered agent by its name, a policy server by the agent its
    metadata names (``served``), else by its URL."""
    if served and (name == "remote" or name.startswith(REMOTE_SCHEMES)):
        return served
    if name.startswith(REMOTE_SCHEMES):
        return redact(name)
    return name.rsplit(":", 1)[-1] if ":" in name and name not in AGENTS else name


def augmented_label(label: str, training_data: Mapping[str, Any] | None) -> str:
    """``label`` with `` +aug`` when ``training_data`` (a learned agent's) lists augmentation sets
    or pretrained encoders (trained on frames of other homes), so results of a model that saw
    more than the track's train split never pass for the track's plain ones."""
    data = training_data or {}
    if not (data.get("augment") or data.get("encoders")) or "+aug" in label:
        return label
    return f"{label} +aug"


def make_agent(name: str, config: Mapping[str, Any] | None = None, *, llm: Any = None) -> Agent:
    """Build the agent ``name`` with its config mapping and, for agents that take a model,
    the model client ``llm`` (agents take it as ``factory(config, *, llm=...)``; None lets
    such an agent build its own from its config).

    Raises:
        RegistryError: unknown name (the message lists the valid ones).
        ConfigError: bad config (unknown key, invalid value), a config for an agent
            that takes none, or a model for an agent that takes none.
    """
    config = dict(config or {})
    if name.startswith(REMOTE_SCHEMES):
        if "url" in config:
            raise ConfigError(f"agent {redact(name)} is a URL; its config cannot set another url")
        name, config = "remote", {"url": name, **config}
    factory = agent_factory(name)
    if _is_policy(factory):
        if config or llm is not None:
            raise ConfigError(f"agent {name} is a policy, not a factory: it takes no agent config or model")
        return as_agent(factory)
    if not callable(factory):
        raise ConfigError(f"agent {name} is a {type(factory).__name__}, not an agent, a policy or a factory")
    extra = {} if llm is None else {"llm": llm}
    if llm is not None and not takes_llm(factory):
        raise ConfigError(f"agent {name} does not take a model; drop --llm")
    config_class = getattr(factory, "config_class", None)
    if config_class is not None:
        return as_agent(factory(config_from_mapping(config_class, config, where=f"agent {name}"), **extra))
    try:
        return as_agent(factory(**config, **extra))
    except TypeError as exc:
        raise ConfigError(f"agent {name}: {exc}") from exc


def _is_policy(obj: Any) -> bool:
    """True for an agent/policy object or a function of exactly one required argument."""
    if inspect.isclass(obj):
        return False
    if isinstance(obj, Agent) or hasattr(obj, "act") or hasattr(obj, "predict"):
        return True
    if not callable(obj):
        return False
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional and p.default is p.empty for p in parameters) == 1


def takes_llm(factory: Any) -> bool:
    """Whether ``factory`` accepts a model client as its ``llm`` keyword argument."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return "llm" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def load_agent_config(path: str | Path | None) -> dict[str, Any]:
    """The agent config mapping of a YAML or JSON file (``{}`` for ``None``). A relative path
    under a ``checkpoint`` or ``*_checkpoint`` key is relative to the file's folder (so a
    shipped ``agent.yaml`` works from any clone and any current folder).

    Raises:
        ConfigError: unreadable file, invalid YAML/JSON, or not a mapping.
    """
    if path is None:
        return {}
    data = read_config_mapping(path, "agent config")
    for key, value in data.items():
        if (key == "checkpoint" or key.endswith("_checkpoint")) and isinstance(value, str) \
                and not Path(value).expanduser().is_absolute():
            data[key] = str((Path(path).resolve().parent / value).resolve())
    return data
