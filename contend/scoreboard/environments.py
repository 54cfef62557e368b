"""Each library in an environment of its own, made by contend and kept under its cache folder.

An environment is a folder that `pip install --target` filled with one library, its
dependencies and a redis-py that contend's scheduler drives. The worker that runs the
library's rows (`contend.scoreboard.worker`) has that folder first on its path, so nothing is
installed into the user's environment and two libraries that install the same import name
(redis-lock-py and python-redis-lock both install `redis_lock`) never meet. A folder is
complete once its marker file is written (it is built beside and renamed into place); a
failed install leaves nothing behind and says why in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from contend.errors import ContendError

#: Where environments go, if set (else $XDG_CACHE_HOME/contend, else ~/.cache/contend).
CACHE_ENV = "CONTEND_CACHE_DIR"
#: Written last into a finished environment: what it was made from and what it holds.
MARKER = "contend-environment.json"
#: An install that takes longer than this is given up (a hung index).
INSTALL_SECONDS = 600.0


class EnvironmentFailed(ContendError):
    """A library's environment could not be made (pip refused or failed); the message says why."""


def cache_root() -> Path:
    """contend's cache folder (the environments are under scoreboard/ in it)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contend"


def redis_requirement() -> str:
    """The redis-py contend supports (its own dependency, read from its metadata): an environment
    gets a redis-py in that range or fails to install, since the scheduler drives no other."""
    try:
        requires = metadata.requires("contend") or []
    except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
        requires = []
    for req in requires:
        if re.match(r"redis\s*[<>=!~]", req) and "extra" not in req:
            return req.split(";")[0].replace(" ", "")
    return "redis>=6.0,<8.2"


@dataclass(frozen=True)
class Environment:
    """The environment of one set of pip requirements (a library, pinned), under `root`."""

    requirements: tuple[str, ...]
    root: Path
    #: Add the redis-py contend drives (False only for environments without Redis in them).
    with_redis: bool = True
    #: Installed after the requirements with `pip install --no-deps`: a library whose declared
    #: redis-py range leaves out the one contend drives (its other dependencies are requirements).
    no_deps: tuple[str, ...] = ()

    @property
    def installs(self) -> tuple[str, ...]:
        """What pip is asked for: the requirements, and redis-py in the range contend drives."""
        return (*self.requirements, redis_requirement()) if self.with_redis else self.requirements

    @property
    def path(self) -> Path:
        """scoreboard/py3.X/<first requirement>-<digest of what it installs>."""
        wanted = "\n".join(self.installs) + "".join(f"\n--no-deps {req}" for req in self.no_deps)
        digest = hashlib.sha256(wanted.encode()).hexdigest()[:10]
        first = (*self.no_deps, *self.requirements)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", first[0]) if first else "none"
        python = f"py{sys.version_info.major}.{sys.version_info.minor}"
        return self.root / "scoreboard" / python / f"{slug}-{digest}"

    @property
    def ready(self) -> bool:
        return (self.path / MARKER).is_file()

    def distributions(self) -> dict[str, str]:
        """Name -> version of every distribution installed in it."""
        found = {}
        for dist in metadata.distributions(path=[str(self.path)]):
            found[dist.metadata["Name"].lower()] = dist.version
        return dict(sorted(found.items()))

    def ensure(self) -> Path:
        """The environment's folder, made first if need be; EnvironmentFailed otherwise."""
        if self.ready:
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        building = self.path.with_name(f"{self.path.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        self._pip(building, self.installs)
        if self.no_deps:
            self._pip(building, ("--no-deps", *self.no_deps))
        marker: dict[str, object] = {"requirements": list(self.installs), "python": sys.version.split()[0]}
        if self.no_deps:
            marker["no_deps"] = list(self.no_deps)
        try:
            building.rename(self.path)
        except OSError:  # another process finished the same environment first
            shutil.rmtree(building, ignore_errors=True)
            if self.ready:
                return self.path
            raise
        marker["distributions"] = self.distributions()
        (self.path / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        return self.path

    def _pip(self, building: Path, arguments: tuple[str, ...]) -> None:
        """`pip install --target building ARGUMENTS`; EnvironmentFailed (the folder removed) if it fails."""
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--no-warn-conflicts",
            "--target",
            str(building),
            *arguments,
        ]
        wanted = " ".join((*self.no_deps, *self.requirements))
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=INSTALL_SECONDS, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(building, ignore_errors=True)
            raise EnvironmentFailed(f"pip install {wanted} took over {INSTALL_SECONDS:.0f} s") from None
        if done.returncode != 0:
            shutil.rmtree(building, ignore_errors=True)
            raise EnvironmentFailed(f"pip install {wanted} failed: {pip_reason(done.stderr)}")


def pip_reason(stderr: str) -> str:
    """The line of pip's output that says why it failed (its last ERROR line, else its last line)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    chosen = errors[-1] if errors else (lines[-1] if lines else "no output")
    return chosen.removeprefix("ERROR: ")[:300]


def worker_environ(path: Path | None) -> dict[str, str]:
    """The environment variables of a worker whose path starts with `path` (None: contend's own)."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])])
    return env
