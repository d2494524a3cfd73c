"""``vlnverse llm check SPEC``: what a model endpoint supports and what each agent will use there."""

from __future__ import annotations

import argparse

from vlnverse.cli.output import print_json, print_table
from vlnverse.errors import ConfigError

_SHOWN = {True: "yes", False: "no", None: "?"}


def register(subparsers) -> None:
    parser = subparsers.add_parser("llm", help="check a model endpoint (OpenAI-compatible servers, local models)")
    llm = parser.add_subparsers(dest="llm_command", metavar="SUBCOMMAND")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)
    check = llm.add_parser(
        "check", help="probe an endpoint: models, chat, JSON mode, json_schema, tools, n, images",
        description="Sends a handful of tiny requests (a few dozen tokens each) and prints what the endpoint "
                    "supports and what each agent will use there. Exits 1 only when plain chat fails.")
    check.add_argument("spec", help="LLM spec, as for --llm (e.g. 'openai:MODEL?base_url=http://127.0.0.1:8000/v1"
                                    "&api_key_env=none')")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    from vlnverse.llm import make_llm
    from vlnverse.llm.check import agent_plan, check_endpoint
    from vlnverse.llm.factory import describe_llm_spec

    client = make_llm(args.spec)
    if client is None:
        raise ConfigError("'none' names no model; give a spec such as openai:MODEL?base_url=...")
    with client:
        report = check_endpoint(client)
    plan = agent_plan(report)
    ok = bool(report["chat"].get("supported"))
    if args.json:
        print_json({"spec": describe_llm_spec(args.spec), "where": getattr(client, "where", client.model),
                    "chat_ok": ok, "features": report, "agents": plan})
    else:
        print_table(f"LLM endpoint: {getattr(client, 'where', client.model)}", ["feature", "supported", "detail"],
                    [[name, _SHOWN[result.get("supported")], result.get("detail", "")]
                     for name, result in report.items()])
        if plan:
            print_table("what each agent will use", ["agent", "uses"], list(plan.items()))
        else:
            print("plain chat fails: no agent can use this endpoint")
    return 0 if ok else 1
