"""API keys for keyed price sources, read only from the environment or the user's config
file, and a redactor so no key ever reaches output, logs, exports, errors or the store.

Config file: `<user config dir>/gpuplan/config.toml` (or `config.yaml`), e.g.

    [keys]
    LAMBDA_API_KEY = "..."

`GPUPLAN_CONFIG` points at another file.
"""
from __future__ import annotations

import os
import pathlib
from typing import Any

from gpuplan.errors import UsageError

_SEEN: set[str] = set()  # every secret value handed out in this process, for redaction
_MIN_REDACT_LEN = 4


def config_path() -> pathlib.Path | None:
    """The user's config file, or None when there is none."""
    if env := os.environ.get("GPUPLAN_CONFIG"):
        return pathlib.Path(env).expanduser()
    import platformdirs

    d = pathlib.Path(platformdirs.user_config_dir("gpuplan", appauthor=False))
    for name in ("config.toml", "config.yaml", "config.yml"):
        if (d / name).is_file():
            return d / name
    return None


def _load_config(path: pathlib.Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read config file {path}: {type(e).__name__}") from None
    try:
        if path.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            import yaml

            from gpuplan.catalog.imports import yaml_loader

            # Safe, strings kept as written, a repeated key refused (which of two API keys would win?).
            data = yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except Exception as e:  # noqa: BLE001 - parser errors may quote the offending line (a key): never echo them
        raise UsageError(f"config file {path} is not valid {path.suffix.lstrip('.').upper()} "
                         f"({type(e).__name__}); fix or move it") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"config file {path} must hold a table/mapping at the top level")
    return data


def get_secret(name: str) -> str | None:
    """A key by its environment-variable name (e.g. LAMBDA_API_KEY): the environment first,
    then the config file's [keys] table (or top level), names matched case-insensitively."""
    value = os.environ.get(name)
    if not value:
        path = config_path()
        if path is not None:
            data = _load_config(path)
            for table in (data.get("keys"), data):
                if isinstance(table, dict):
                    found = {str(k).lower(): v for k, v in table.items()}.get(name.lower())
                    if isinstance(found, str) and found:
                        value = found
                        break
    if value:
        value = value.strip()
        remember(value)
        return value
    return None


def remember(value: str) -> None:
    if value and len(value) >= _MIN_REDACT_LEN:
        _SEEN.add(value)


def redact(text: str) -> str:
    """`text` with every secret this process has read replaced by '***'."""
    out = str(text)
    for v in sorted(_SEEN, key=len, reverse=True):
        out = out.replace(v, "***")
    return out
