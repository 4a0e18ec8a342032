"""`gpuplan web`: the JSON API and the planning page, served on this machine (loopback by default)."""
from __future__ import annotations

import ipaddress
import os
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


WorkersOpt = Annotated[int | None, typer.Option(
    "--workers", help="Server processes (default: this machine's cores). Plans are CPU-bound: one process "
                      "uses about one core.")]
ThreadsOpt = Annotated[int | None, typer.Option(
    "--threads", help="Requests computed at once per process (default: cores / workers, at least 2). More "
                      "threads only contend for the same core.")]
MAX_WORKERS = 64
MAX_THREADS = 64
# The settings a worker process reads (uvicorn starts workers from an import string, not an object).
CONFIG_ENV = "GPUPLAN_WEB_CONFIG"


def machine_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ServerConfig:
    host: str
    port: int
    db: str | None
    loopback: bool
    allowed_hosts: tuple[str, ...] | None  # Host headers accepted; None = any (non-loopback bind)
    workers: int = 1
    threads: int = 2

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


def server_config(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, db: str | None = None,
                  workers: int | None = None, threads: int | None = None) -> ServerConfig:
    """The resolved, validated settings `gpuplan web` serves with."""
    from gpuplan.errors import UsageError

    host = (host or "").strip()
    if not host:
        raise UsageError("--host must not be empty (default 127.0.0.1)")
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be in 1..65535, got {port}")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be in 1..{MAX_WORKERS}, got {workers}")
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        raise UsageError(f"--threads must be in 1..{MAX_THREADS}, got {threads}")
    cores = machine_cores()
    workers = workers or min(cores, MAX_WORKERS)
    threads = threads or max(2, -(-cores // workers))
    loopback = is_loopback(host)
    allowed = None
    if loopback:
        allowed = tuple(dict.fromkeys(("127.0.0.1", "localhost", "::1", host.strip("[]").lower())))
    return ServerConfig(host=host, port=port, db=db, loopback=loopback, allowed_hosts=allowed, workers=workers,
                        threads=threads)


@app.command("web")
def web_command(host: HostOpt = DEFAULT_HOST, port: PortOpt = DEFAULT_PORT, db: DbOpt = None,
                workers: WorkersOpt = None, threads: ThreadsOpt = None) -> None:
    """Serve the planning page and its JSON API (OpenAPI at /openapi.json) until Ctrl-C."""
    import json
    import sys

    cfg = server_config(host, port, db, workers, threads)
    if not cfg.loopback:
        print(f"warning: binding {cfg.host} exposes the planner to your network; it has no authentication "
              "(default is 127.0.0.1)", file=sys.stderr)
    import uvicorn

    web = build_app(cfg)  # loads the catalog now: a bad --db fails here, in one line, not on the first request
    check_port_free(cfg)  # a busy port fails here, in one line with exit 1, before the URL is printed
    print(f"gpuplan web: {cfg.url} ({cfg.workers} process{'es' if cfg.workers > 1 else ''} x {cfg.threads} "
          f"threads; Ctrl-C to stop)", file=sys.stderr)
    try:
        if cfg.workers == 1:
            uvicorn.run(web, host=cfg.host, port=cfg.port, log_level="warning", server_header=False)
        else:
            # Worker processes build their own app from the same settings (uvicorn imports the factory).
            os.environ[CONFIG_ENV] = json.dumps({"host": cfg.host, "port": cfg.port, "db": cfg.db,
                                                 "workers": cfg.workers, "threads": cfg.threads})
            del web
            uvicorn.run("gpuplan.cli.cmd_web:worker_app", factory=True, host=cfg.host, port=cfg.port,
                        workers=cfg.workers, log_level="warning", server_header=False)
    except SystemExit as e:  # uvicorn exits 3 when it cannot start (the port was taken meanwhile)
        if e.code not in (None, 0):
            from gpuplan.errors import GpuplanError

            raise GpuplanError(f"the server could not start on {cfg.host}:{cfg.port} (see above)") from None
        raise


def build_app(cfg: ServerConfig):
    """The app one server process runs: its catalog loaded, its thread pool sized to `cfg.threads`."""
    from gpuplan.web.app import create_app

    web = create_app(cfg.db, allowed_hosts=cfg.allowed_hosts)
    web.state.gpuplan.catalog()
    threads = cfg.threads

    async def _size_thread_pool() -> None:
        # Plans are CPU-bound under the GIL: anyio's default 40 threads only thrash one core (the
        # 2026-11 review: 5.5 plans/s at 40 threads against 11.5/s at 2). Also bounds the memory
        # of requests computed at once.
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = threads

    web.router.on_startup.append(_size_thread_pool)
    return web


def worker_app():
    """uvicorn's app factory for `gpuplan web --workers N` (N > 1): settings from $GPUPLAN_WEB_CONFIG."""
    import json

    raw = json.loads(os.environ.get(CONFIG_ENV) or "{}")
    cfg = server_config(raw.get("host", DEFAULT_HOST), int(raw.get("port", DEFAULT_PORT)), raw.get("db"),
                        raw.get("workers"), raw.get("threads"))
    return build_app(cfg)


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
