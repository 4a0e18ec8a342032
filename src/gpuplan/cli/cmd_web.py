"""`gpuplan web`: the JSON API and the planning page, served on this machine (loopback by default)."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Annotated

import typer

from gpuplan.cli.app import app
from gpuplan.cli.options import DbOpt

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK_NAMES = ("localhost",)

HostOpt = Annotated[str, typer.Option("--host", help="Address to bind. Anything but loopback exposes the planner to your network.")]
PortOpt = Annotated[int, typer.Option("--port", help="TCP port.")]


@dataclass(frozen=True)
class ServerConfig:
    host: str
    port: int
    db: str | None
    loopback: bool
    allowed_hosts: tuple[str, ...] | None  # Host headers accepted; None = any (non-loopback bind)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"


def is_loopback(host: str) -> bool:
    h = host.strip().lower().strip("[]")
    if h in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def server_config(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, db: str | None = None) -> ServerConfig:
    """The resolved, validated settings `gpuplan web` serves with."""
    from gpuplan.errors import UsageError

    host = (host or "").strip()
    if not host:
        raise UsageError("--host must not be empty (default 127.0.0.1)")
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be in 1..65535, got {port}")
    loopback = is_loopback(host)
    allowed = None
    if loopback:
        allowed = tuple(dict.fromkeys(("127.0.0.1", "localhost", "::1", host.strip("[]").lower())))
    return ServerConfig(host=host, port=port, db=db, loopback=loopback, allowed_hosts=allowed)


@app.command("web")
def web_command(host: HostOpt = DEFAULT_HOST, port: PortOpt = DEFAULT_PORT, db: DbOpt = None) -> None:
    """Serve the planning page and its JSON API (OpenAPI at /openapi.json) until Ctrl-C."""
    import sys

    cfg = server_config(host, port, db)
    if not cfg.loopback:
        print(f"warning: binding {cfg.host} exposes the planner to your network; it has no authentication "
              "(default is 127.0.0.1)", file=sys.stderr)
    import uvicorn

    from gpuplan.web.app import create_app

    web = create_app(cfg.db, allowed_hosts=cfg.allowed_hosts)
    web.state.gpuplan.catalog()  # load now: a bad --db fails here, in one line, not on the first request
    check_port_free(cfg)  # a busy port fails here, in one line with exit 1, before the URL is printed
    print(f"gpuplan web: {cfg.url} (Ctrl-C to stop)", file=sys.stderr)
    try:
        uvicorn.run(web, host=cfg.host, port=cfg.port, log_level="warning", server_header=False)
    except SystemExit as e:  # uvicorn exits 3 when it cannot start (the port was taken meanwhile)
        if e.code not in (None, 0):
            from gpuplan.errors import GpuplanError

            raise GpuplanError(f"the server could not start on {cfg.host}:{cfg.port} (see above)") from None
        raise


def check_port_free(cfg: ServerConfig) -> None:
    """Bind and release the address as uvicorn will (SO_REUSEADDR, so a port in TIME_WAIT is free):
    GpuplanError (exit 1) in one line when the port is in use, not allowed, or the host cannot be bound."""
    import errno
    import socket

    from gpuplan.errors import GpuplanError

    host = cfg.host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, cfg.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise GpuplanError(f"--host {cfg.host}: cannot resolve it ({getattr(e, 'strerror', None) or e})") from None
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise GpuplanError(f"port {cfg.port} on {cfg.host} is already in use (another gpuplan web?); "
                               f"stop it or pick another with --port") from None
        if e.errno in (errno.EACCES, errno.EPERM):
            raise GpuplanError(f"port {cfg.port} on {cfg.host}: permission denied (ports below 1024 need "
                               "privileges); pick another with --port") from None
        if e.errno == errno.EADDRNOTAVAIL:
            raise GpuplanError(f"--host {cfg.host}: not an address of this machine") from None
        raise GpuplanError(f"cannot listen on {cfg.host}:{cfg.port} ({e.strerror or e})") from None
    finally:
        sock.close()
