"""One careful HTTP path for every source: timeouts, a few retries with exponential
backoff on 5xx/429/timeouts, a hard cap on answer size, JSON shape checks and pagination.

Marketplace and cloud APIs fail in every way (providers.md §2: unpublished rate limits,
Azure 429s); a refresh must fail cleanly with a one-line reason, never hang, never load a
runaway answer into memory, and never put a key or header into an error message.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from gpuplan.catalog.sources.base import SourceError

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "gpuplan-catalog/0.1 (+price refresh)"


@dataclass(frozen=True)
class HttpSettings:
    """Network limits; tests shrink the delays to milliseconds."""

    timeout_s: float = 20.0
    retries: int = 2  # extra attempts after the first
    backoff_s: float = 0.5  # first retry delay; doubles each time
    max_backoff_s: float = 8.0
    max_bytes: int = 64 * 2**20
    max_pages: int = 200

    @classmethod
    def from_env(cls) -> "HttpSettings":
        """Overrides from GPUPLAN_HTTP_TIMEOUT_S / _RETRIES / _BACKOFF_S / _MAX_BYTES."""
        kw: dict[str, Any] = {}
        for field, env, conv in (("timeout_s", "GPUPLAN_HTTP_TIMEOUT_S", float), ("retries", "GPUPLAN_HTTP_RETRIES", int),
                                 ("backoff_s", "GPUPLAN_HTTP_BACKOFF_S", float), ("max_bytes", "GPUPLAN_HTTP_MAX_BYTES", int)):
            if (v := os.environ.get(env)) not in (None, ""):
                try:
                    kw[field] = conv(v)
                except ValueError:
                    from gpuplan.errors import UsageError
                    raise UsageError(f"{env}={v!r} is not a number") from None
        return cls(**kw)


def make_client(settings: HttpSettings | None = None) -> httpx.Client:
    s = settings or HttpSettings.from_env()
    client = httpx.Client(timeout=httpx.Timeout(s.timeout_s), follow_redirects=True,
                          headers={"User-Agent": USER_AGENT}, trust_env=True)  # honour HTTPS_PROXY, SSL_CERT_FILE
    client.gpuplan_settings = s  # type: ignore[attr-defined]
    return client


def settings_of(client: httpx.Client) -> HttpSettings:
    return getattr(client, "gpuplan_settings", None) or HttpSettings()


def where(url: str) -> str:
    """Host and path only: query strings may carry filters or tokens, and user:password@ in
    the address is a credential (GPUPLAN_VAST_URL=https://user:pass@host): neither is echoed."""
    try:
        u = urlsplit(str(url))
        host = u.hostname or ""
        port = u.port
    except ValueError:  # a malformed port or bracket: say nothing that could hold a secret
        return "(unparseable URL)"
    if ":" in host:
        host = f"[{host}]"
    return f"{host}{f':{port}' if port is not None else ''}{u.path}"


def fetch_bytes(client: httpx.Client, method: str, url: str, *, params: dict | None = None,
                json_body: Any = None, headers: dict | None = None, response_headers: dict | None = None) -> bytes:
    """The body of a successful answer, with retries; SourceError otherwise. `response_headers`,
    when given, receives the answer's headers (lower-case names), e.g. Last-Modified."""
    s = settings_of(client)
    delay = s.backoff_s
    last = "no attempt"
    for attempt in range(s.retries + 1):
        if attempt:
            time.sleep(min(delay, s.max_backoff_s))
            delay *= 2
        try:
            with client.stream(method, url, params=params, json=json_body, headers=headers) as r:
                if r.status_code in RETRY_STATUS:
                    last = f"HTTP {r.status_code} from {where(url)}"
                    retry_after = _retry_after_s(r.headers.get("retry-after"))
                    if retry_after is not None:
                        delay = max(delay, min(retry_after, s.max_backoff_s))
                    continue
                if r.status_code >= 400:
                    hint = " (check the API key)" if r.status_code in (401, 403) else ""
                    raise SourceError(f"HTTP {r.status_code} from {where(url)}{hint}")
                declared = r.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > s.max_bytes:
                    raise SourceError(f"answer from {where(url)} is {int(declared) / 2**20:.0f} MiB, over the "
                                      f"{s.max_bytes / 2**20:.0f} MiB cap; refused")
                chunks, size = [], 0
                deadline = time.monotonic() + 4 * s.timeout_s  # a trickling answer is a timeout too
                for chunk in r.iter_bytes():
                    size += len(chunk)
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("total deadline")
                    if size > s.max_bytes:
                        raise SourceError(f"answer from {where(url)} exceeds the {s.max_bytes / 2**20:.3g} MiB cap; refused")
                    chunks.append(chunk)
                if response_headers is not None:
                    response_headers.update({k.lower(): v for k, v in r.headers.items()})
                return b"".join(chunks)
        except httpx.TimeoutException:
            last = f"timed out after {s.timeout_s:g} s waiting for {where(url)}"
        except httpx.TransportError as e:
            last = f"cannot reach {where(url)} ({type(e).__name__})"
        except httpx.InvalidURL:
            raise SourceError(f"invalid URL for {where(url)}") from None
    raise SourceError(f"{last} (after {s.retries + 1} tries)")


def _retry_after_s(v: str | None) -> float | None:
    try:
        return max(0.0, float(v)) if v else None
    except ValueError:
        return None


def fetch_json(client: httpx.Client, method: str, url: str, **kw) -> Any:
    body = fetch_bytes(client, method, url, **kw)
    if not body.strip():
        raise SourceError(f"empty answer from {where(url)}")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:
        raise SourceError(f"malformed JSON from {where(url)}: {str(e)[:80]}") from None


def expect(obj: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """Shape check: `obj` must be a `kind`, or the source fails naming what was wrong."""
    if not isinstance(obj, kind) or isinstance(obj, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        got = "null" if obj is None else type(obj).__name__
        raise SourceError(f"unexpected answer shape: {what} should be {_plain(names)}, got {_plain(got)}")
    return obj


def _plain(name: str) -> str:
    return name.replace("dict", "an object").replace("list", "a list").replace("str", "a string")


def expect_key(obj: dict, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in obj:
        raise SourceError(f"unexpected answer shape: {what} has no {key!r}")
    return expect(obj[key], kind, f"{what}.{key}")


def paginate(fetch_page: Callable[[Any], tuple[list, Any]], max_pages: int, what: str) -> Iterator[list]:
    """Follow next tokens (links or cursors) until there is none; a token seen twice or
    more than `max_pages` pages is an error, not an endless loop."""
    token, seen = None, set()
    for _ in range(max_pages):
        items, nxt = fetch_page(token)
        yield items
        if not nxt:
            return
        if nxt in seen:
            raise SourceError(f"{what}: pagination loops (next page repeats)")
        seen.add(nxt)
        token = nxt
    raise SourceError(f"{what}: more than {max_pages} pages; refused")


DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        u = urlsplit(str(url))
        scheme, host = u.scheme.lower(), (u.hostname or "").lower()
        port = u.port if u.port is not None else DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    return (scheme, host, port) if scheme and host else None


def same_host(url: str, base: str) -> bool:
    """Same scheme, host and port, the default port spelt out or not: Azure's NextPageLink is
    `https://prices.azure.com:443/...` for a query sent to `https://prices.azure.com/...`.
    Credentials in either address are ignored; another host, scheme or port is not the same."""
    a, b = _origin(url), _origin(base)
    return a is not None and a == b


def base_url(env_var: str, default: str, override: str | None) -> str:
    """Explicit argument > environment variable > the provider's public address."""
    return (override or os.environ.get(env_var) or default).rstrip("/")
