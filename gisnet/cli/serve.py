"""``gisnet serve``: load a town once and answer HTTP queries from memory."""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from .common import DEFAULT_OUT, add_town_options, load_town, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "serve",
        help="HTTP API over the loaded town (FastAPI on uvicorn)",
        description="Load the town, build the graph and every result table once, then "
                    "answer HTTP queries: obligations, traces, control manholes, capacity, "
                    "what-if and maps. OpenAPI at /openapi.json, docs at /docs.",
    )
    add_town_options(p)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help="folder of generated maps served at /maps/NAME (default: maps/); "
                        "nothing is written")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    p.add_argument("--max-body-mb", type=float, default=16.0, metavar="MB",
                   help="largest request body accepted, MiB (default: 16); larger gets 413")
    p.add_argument("--max-batch", type=int, default=20_000, metavar="N",
                   help="most ids/features in one batch request (default: 20000); "
                        "more gets 413")
    p.add_argument("--cors-origin", action="append", default=[], metavar="URL",
                   help="let web pages from this origin call the service (repeatable; "
                        "'*' for any)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..errors import ConfigError
    from ..service import ServiceLimits, TownState, create_app

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a TCP port (0-65535)")
    if args.max_body_mb <= 0 or args.max_batch <= 0:
        raise ConfigError("--max-body-mb and --max-batch must be positive")
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError("the maps folder to serve is an existing file, not a folder",
                          path=args.out)
    t0 = time.perf_counter()
    town = load_town(args)
    state = TownState.from_town(town, out_dir=args.out)
    state.timings_s = {"load_town": time.perf_counter() - t0 - sum(state.timings_s.values()),
                       **state.timings_s}
    limits = ServiceLimits(max_body_bytes=int(args.max_body_mb * 1024 * 1024),
                           max_batch=args.max_batch, cors_origins=tuple(args.cors_origin))
    app = create_app(state, limits)
    for name, why in state.unavailable.items():
        say(args, f"gisnet: {name} not available: {why}")
    say(args, f"gisnet: serving {town.name} ({len(town.layers['parcels'])} parcels) at "
              f"http://{args.host}:{args.port} (loaded in {time.perf_counter() - t0:.1f} s)")
    # the loaded state lives as long as the process: keep it out of the cyclic
    # garbage collector's full passes, which otherwise show as latency spikes
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=args.host, port=args.port, access_log=args.access_log,
                log_level="info" if args.verbose else "warning", lifespan="off")
    return 0
