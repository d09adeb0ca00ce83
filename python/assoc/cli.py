"""The `assoc` command."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from assoc import Error, __version__, cli_inspect, cli_query, cli_transfer
from assoc.cli_console import CommandFailed, fail_message
from assoc.server.settings import Settings, settings_help
from assoc.server.store import check_data_dir

if TYPE_CHECKING:
    import uvicorn

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9076
DEFAULT_DATA_DIR = "./assoc-data"


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="assoc", description="assoc associative data engine")
    parser.add_argument("--version", action="version", version=f"assoc {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve_parser = commands.add_parser(
        "serve",
        help="serve the engine HTTP API",
        description="Serve the engine HTTP API until SIGINT or SIGTERM "
        "(requests in flight finish).",
        epilog="settings (-S Name=Value, or the environment variable ASSOC_<Name>; -S wins):\n"
        + settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})"
    )
    serve_parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port to bind (default {DEFAULT_PORT})"
    )
    serve_parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help=f"folder the apps are stored in (default {DEFAULT_DATA_DIR})",
    )
    serve_parser.add_argument(
        "-S",
        dest="settings",
        action="append",
        default=[],
        metavar="Name=Value",
        help="a setting (see below); repeat for more",
    )
    serve_parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="log level (default info)",
    )
    serve_parser.add_argument("--access-log", action="store_true", help="log every request")
    serve_parser.set_defaults(run=serve)
    cli_inspect.add_parser(commands)
    cli_query.add_parser(commands)
    cli_transfer.add_parsers(commands)
    return parser


def server_config(
    app: Any,
    host: str,
    port: int,
    log_level: str = "info",
    access_log: bool = False,
    ws_max_size: int = Settings.qix_max_message_bytes,
    qix_compression: str = Settings.qix_compression,
    shutdown_timeout: int = Settings.shutdown_timeout,
    header_read_timeout: int = Settings.header_read_timeout,
    max_incomplete_per_address: int = Settings.max_incomplete_requests_per_address,
) -> uvicorn.Config:
    """The uvicorn configuration `assoc serve` runs an ASGI app with."""
    import uvicorn

    from assoc.server.protocol import bounded_protocol
    from assoc.server.qix.wire import qix_protocol

    return uvicorn.Config(
        app,
        http=bounded_protocol(header_read_timeout, max_incomplete_per_address),
        ws=qix_protocol(qix_compression),
        ws_max_size=ws_max_size,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        server_header=False,
        # SIGTERM waits this long for running requests, then cancels them (an upload's
        # partial file is removed) and stops.
        timeout_graceful_shutdown=shutdown_timeout,
    )


def serve(args: argparse.Namespace) -> int:
    """Runs the service until it is told to stop; returns the exit status."""
    try:
        settings = Settings.from_sources(args.settings)
    except Error as exc:
        print(f"assoc serve: {exc}", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"assoc serve: --port {args.port} is not a port number", file=sys.stderr)
        return 2
    try:
        os.makedirs(args.data_dir, exist_ok=True)
        if not os.access(args.data_dir, os.W_OK | os.X_OK):
            raise PermissionError(f"{args.data_dir} is not writable")
        check_data_dir(args.data_dir)
    except OSError as exc:
        print(f"assoc serve: cannot use data dir {args.data_dir!r}: {exc}", file=sys.stderr)
        return 2
    except Error as exc:
        print(f"assoc serve: {exc}", file=sys.stderr)
        return 2

    from assoc.server import create_app, going_away
    from assoc.server.metrics import metrics_of

    try:
        app = create_app(settings, args.data_dir)
        listener = bind(args.host, args.port)
    except (RuntimeError, OSError, Error) as exc:
        print(f"assoc serve: {exc}", file=sys.stderr)
        return 2
    with listener:
        host, port = listener.getsockname()[:2]
        # With --port 0 the system picks the port: this line is how callers learn it.
        print(f"assoc serve: listening on {_url(host, port)}", file=sys.stderr, flush=True)
        server = stopping_server(
            lambda: going_away(app),
            server_config(
                app,
                args.host,
                port,
                args.log_level,
                args.access_log,
                ws_max_size=settings.qix_max_message_bytes,
                qix_compression=settings.qix_compression,
                shutdown_timeout=settings.shutdown_timeout,
                header_read_timeout=settings.header_read_timeout,
                max_incomplete_per_address=settings.max_incomplete_requests_per_address,
            ),
        )
        metrics = metrics_of(app)
        if settings.prometheus_port:
            try:
                metrics.serve_on(args.host, settings.prometheus_port)
            except OSError as exc:
                print(
                    f"assoc serve: PrometheusPort {settings.prometheus_port}: {exc}",
                    file=sys.stderr,
                )
                return 2
            print(
                f"assoc serve: metrics on {_url(args.host, settings.prometheus_port)}",
                file=sys.stderr,
                flush=True,
            )
        try:
            server.run(sockets=[listener])
        finally:
            metrics.stop()
    return 0 if server.started else 1


def stopping_server(on_stop: Callable[[], None], config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server that calls `on_stop` as its shutdown starts (before it waits for the
    requests in progress)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            on_stop()
            await super().shutdown(sockets)

    return Server(config)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(2048)
    except BaseException:
        listener.close()
        raise
    return listener


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        status: int = args.run(args)
    except BrokenPipeError:
        # The reader (such as `head`) has gone: silence the interpreter's final flush too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CommandFailed, Error, OSError) as exc:
        message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.filename}: {message}"
        print(fail_message(args.command, message), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(fail_message(args.command, "interrupted"), file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
