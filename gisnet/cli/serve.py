"""``gisnet serve``: load a town once and answer HTTP queries from memory."""

from __future__ import annotations

import argparse
import gc
import socket
import threading
import time
from pathlib import Path

from .common import DEFAULT_OUT, add_town_options, load_town, say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="HTTP API over the loaded town (FastAPI on uvicorn)",
        description="Load the town, build the graph and every result table once, then "
                    "answer HTTP queries: obligations, traces, control manholes, capacity, "
                    "what-if and maps. OpenAPI at /openapi.json, docs at /docs.",
    )
    add_town_options(p)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help="folder of generated maps served at /maps/NAME (default: maps/; "
                        "with --results DIR, DIR itself); nothing is written")
    p.add_argument("--maps", type=Path, default=None, metavar="DIR",
                   help="serve only the map pages and vector tiles of DIR (written by "
                        "`gisnet run`/`gisnet map`, tiled or not) without loading a town: "
                        "starts at once whatever the town's size; open the printed URL")
    p.add_argument("--results", default=None, metavar="DIR|URL",
                   help="serve the results `gisnet run --out DIR` wrote, read and not "
                        "recomputed: starts in seconds whatever the town's size. The run's "
                        "manifest is checked first (every file's hash, the gisnet version); "
                        "what the results cannot answer (upstream traces, obligations and "
                        "control manholes of request geometry, the input layers) answers "
                        "503, listed at start; maps in DIR are served at /maps/NAME. Or the "
                        "PostGIS schema `gisnet run --out postgresql://...?schema=NAME` "
                        "wrote, as that URL (or PG:... schemas=NAME), read only: its newest "
                        "gisnet_runs row is checked (the gisnet version, every table's row "
                        "count); maps of --out DIR are served",
                   )
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    p.add_argument("--base-url", default=None, metavar="URL",
                   help="URL clients reach the service at, e.g. https://gis.example.gov/sewer "
                        "behind a proxy: every link the service writes starts with it, "
                        "never with a request's Host header (default: the listening "
                        "address, http://HOST:PORT)")
    p.add_argument("--max-body-mb", type=float, default=16.0, metavar="MB",
                   help="largest request body accepted, MiB (default: 16); larger gets 413")
    p.add_argument("--max-batch", type=int, default=20_000, metavar="N",
                   help="most ids/features in one batch request (default: 20000); "
                        "more gets 413")
    p.add_argument("--max-vertices", type=int, default=100_000, metavar="N",
                   help="most vertices in the geometry of one request, all features "
                        "together (default: 100000); more gets 413")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
                   help="seconds a client has to send its request line and headers "
                        "(default: 10); later gets 408 and the connection closed")
    p.add_argument("--body-timeout", type=float, default=60.0, metavar="S",
                   help="seconds a client has to send the body once the headers are in "
                        "(default: 60); later gets 408 and the connection closed")
    p.add_argument("--cors-origin", action="append", default=[], metavar="URL",
                   help="let web pages from this origin call the service (repeatable; "
                        "'*' for any)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..extras import require

    require("service", "gisnet serve")
    from ..service.app import base_url_of
    from ..service.server import listen

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a TCP port (0-65535)")
    if args.base_url is not None:
        args.base_url = base_url_of(args.base_url)  # checked before the town is loaded
    for opt in ("max_body_mb", "max_batch", "max_vertices", "header_timeout", "body_timeout"):
        value = getattr(args, opt)
        if not value > 0 or value == float("inf"):  # NaN is not > 0
            raise ConfigError(f"--{opt.replace('_', '-')} {value} must be a positive number")
    if args.maps is not None:
        if args.results is not None:
            raise ConfigError("give --maps DIR or --results DIR, not both")
        return _serve_maps(args)
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError("the maps folder to serve is an existing file, not a folder",
                          path=args.out)
    if args.results is not None:
        given = [f"--{o}" for o in ("layers", "sample", "profile", "crs")
                 if getattr(args, o, None)]
        if given:
            raise ConfigError(f"--results serves a finished run as it was computed: "
                              f"{', '.join(given)} cannot change it (leave "
                              f"{'it' if len(given) == 1 else 'them'} out, or serve the "
                              "town with --layers)")
    # the address taken before the town is loaded: one in use is said at once, and a
    # client connecting meanwhile waits to be answered
    sock = listen(args.host, args.port)
    args.port = sock.getsockname()[1]  # --port 0: the free port taken
    with sock:  # closed however the load ends
        return _serve_town(args, sock)


def _serve_town(args: argparse.Namespace, sock: socket.socket) -> int:
    """``gisnet serve`` of a town or a run's results on the listening ``sock``."""
    from ..io.postgis import is_database, redact
    from ..memory import long_lived
    from ..service import ServiceLimits, TownState, create_app
    from ..service.server import make_server

    t0 = time.perf_counter()
    if args.results is not None:
        # (a county's graph is 600,000 dicts: the collector would walk them again and again)
        with long_lived():
            state = TownState.from_results(args.results, out_dir=args.out) \
                if is_database(args.results) else TownState.from_results(Path(args.results))
        town = state.town
        run = state.run or {}
        say(args, f"gisnet: run {run.get('run_id')} of {run.get('created_utc')}: "
                  f"{run.get('town')}, profile {run.get('profile_id')}, written by gisnet "
                  f"{run.get('gisnet_version')} (from {redact(args.results)})")
        parcels = len(state.tables["parcels"]) if "parcels" in state.tables else 0
    else:
        with long_lived():
            town = load_town(args)
            state = TownState.from_town(town, out_dir=args.out)
        state.timings_s = {"load_town": time.perf_counter() - t0
                           - sum(state.timings_s.values()), **state.timings_s}
        parcels = len(town.layers["parcels"])
    limits = ServiceLimits(max_body_bytes=int(args.max_body_mb * 1024 * 1024),
                           max_batch=args.max_batch, max_vertices=args.max_vertices,
                           header_timeout_s=args.header_timeout,
                           body_timeout_s=args.body_timeout,
                           cors_origins=tuple(args.cors_origin))
    app = create_app(state, limits, base_url=listening_url(args))
    for name, why in state.unavailable.items():
        say(args, f"gisnet: {name} not available: {why}")
    # the loaded state lives as long as the process: keep it out of the cyclic
    # garbage collector's full passes, which otherwise show as latency spikes
    gc.collect()
    gc.freeze()

    def started() -> None:  # said once the server accepts connections
        say(args, f"gisnet: serving {town.name} ({parcels} parcels) at "
                  f"http://{args.host}:{args.port} (loaded in {time.perf_counter() - t0:.1f} s)")
        # the pages (tiled or not) a planner opens
        if state.out_dir is not None and (state.out_dir / "index.html").is_file():
            say(args, f"gisnet: maps at http://{args.host}:{args.port}/maps/index.html")
        if args.results is not None:  # the hot tables serialized while the server listens
            def warm() -> None:
                say(args, f"gisnet: hot tables and parcel traces serialized in "
                          f"{state.warm():.1f} s")

            threading.Thread(target=warm, name="gisnet-warm", daemon=True).start()

    # uvicorn with read deadlines for slow clients (gisnet.service.server)
    make_server(app, host=args.host, port=args.port, limits=limits,
                access_log=args.access_log, log_level="info" if args.verbose else "warning",
                on_started=started).run(sockets=[sock])
    return 0


def listening_url(args: argparse.Namespace) -> str:
    """``--base-url``, else ``http://HOST:PORT`` of the listening address (the
    machine's name when listening on every interface)."""
    if args.base_url:
        return str(args.base_url)
    import socket

    host = args.host
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"http://{host}:{args.port}"


def _serve_maps(args: argparse.Namespace) -> int:
    """``gisnet serve --maps DIR``: the pages and tiles of a folder, no town loaded."""
    from ..errors import ConfigError
    from ..service.limits import ServiceLimits
    from ..service.server import listen, make_server
    from ..service.tiles import create_maps_app

    if not args.maps.is_dir():
        raise ConfigError("the maps folder to serve is not a folder", path=args.maps)
    pages = sorted(p.name for p in args.maps.glob("*.html"))
    if not pages:
        raise ConfigError("no map pages (*.html) to serve; write them with `gisnet run` or "
                          "`gisnet map all --out DIR`", path=args.maps)
    limits = ServiceLimits(header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout)
    app = create_maps_app(args.maps)
    first = "index.html" if "index.html" in pages else pages[0]
    sock = listen(args.host, args.port)
    port = sock.getsockname()[1]  # --port 0: the free port taken
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    server = make_server(app, host=args.host, port=port, limits=limits,
                         access_log=args.access_log,
                         log_level="info" if args.verbose else "warning",
                         on_started=lambda: say(args, f"gisnet: serving the maps of {args.maps} "
                                                      f"at http://{host}:{port}/maps/{first}"))
    server.run(sockets=[sock])
    return 0
