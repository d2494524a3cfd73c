"""``vlnverse serve-policy AGENT``: serve an agent over the openpi websocket policy protocol."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve-policy", help="serve an agent over the openpi websocket policy protocol",
        description="Serve any agent the harness can load (a name, module:attr or path/to/file.py:attr) "
                    "over the openpi websocket policy protocol, one agent per connection, until "
                    "interrupted. Evaluate it from anywhere with: vlnverse eval --agent ws://HOST:PORT ...")
    parser.add_argument("agent", help="agent name, module:attr or path/to/file.py:attr")
    parser.add_argument("--agent-config", type=Path, default=None, help="agent settings (YAML or JSON)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 picks a free one)")
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="refuse clients whose 'Authorization: Api-Key ...' is not the key in VAR")
    parser.add_argument("--max-frame-mb", type=float, default=16.0,
                        help="largest frame accepted from a client, in MiB (default: 16)")
    parser.add_argument("--json", action="store_true",
                        help="announce the listening address as one JSON object instead of a sentence")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from vlnverse.agents.remote.server import serve_policy
    from vlnverse.errors import ConfigError
    from vlnverse.eval.registry import load_agent_config, make_agent

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    if not args.max_frame_mb > 0:
        raise ConfigError(f"--max-frame-mb must be positive, got {args.max_frame_mb}")
    config = load_agent_config(args.agent_config)
    make_agent(args.agent, config).close()  # a bad name or config fails now, not per connection

    def ready(url: str) -> None:
        if args.json:
            print(json.dumps({"agent": args.agent, "url": url}), flush=True)
        else:
            print(f"serving {args.agent} on {url}", flush=True)

    serve_policy(lambda: make_agent(args.agent, config), host=args.host, port=args.port,
                 api_key_env=args.api_key_env, max_frame_mb=args.max_frame_mb, on_ready=ready)
    return 0
