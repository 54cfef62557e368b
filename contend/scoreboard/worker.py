"""The process that runs scoreboard rows inside a library's own environment.

`python -m contend.scoreboard.worker` reads one request (JSON on stdin: the rows, the server's
URL, the battery's options), starts a server of its own when the board's is one contend started
(`own_server`: rows at once never share a server's virtual clock), runs each row as `contend.scoreboard.run.run_library` would in
contend's own process, and writes one JSON line per event on its standard output: `start` when
a row starts, `result` per check, `row` when a row is done. Whatever the library prints goes to
standard error instead, so it cannot break the stream.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import IO, Any

from contend import interrupt
from contend.check.framework import CheckOptions, CheckResult
from contend.check.noise import quieted
from contend.errors import ContendError
from contend.scoreboard.confirm import CONFIRM_ATTEMPTS
from contend.scoreboard.libraries import by_key
from contend.scoreboard.run import LibraryResult, run_library
from contend.servers.clock import ServerClock
from contend.servers.target import open_target


def result_json(r: CheckResult) -> dict[str, Any]:
    """A check's result as JSON (facts that are not JSON become strings)."""
    return json.loads(json.dumps(dataclasses.asdict(r), default=str))


def row_json(result: LibraryResult) -> dict[str, Any]:
    """What the parent needs of a finished row."""
    return {
        "row": result.library.key,
        "version": result.version,
        "skipped": result.skipped,
        "seconds": result.seconds,
        "fidelity": result.fidelity,
        "fidelity_seen": result.fidelity_seen,
        "fidelity_error": result.fidelity_error,
        "noise": result.noise,
        "results": [result_json(r) for r in (result.row.results if result.row else [])],
    }


def _emit_result(emit: Callable[..., None], row: str, subject: Any, result: CheckResult) -> None:
    emit("result", row=row, result=result_json(result))


def serve(request: dict[str, Any], events: IO[str]) -> None:
    """Run the request's rows, writing events to `events`."""

    def emit(event: str, **fields: Any) -> None:
        events.write(json.dumps({"event": event, **fields}) + "\n")
        events.flush()

    options = CheckOptions(**request["options"])
    own_server = bool(request.get("own_server"))
    # A server of its own (when contend started the board's): rows running at once would otherwise
    # share one server and its virtual clock, and one row's time jumps would expire another's leases.
    opened = (
        open_target(redis_server=request.get("redis_server")) if own_server else open_target(request["url"])
    )
    with opened as served:
        clock = request.get("clock")
        target = (
            served
            if own_server or not clock
            else replace(served, clock=ServerClock.attach(clock["path"], clock["epoch"]))
        )
        for library in by_key(request["rows"]):
            emit("start", row=library.key)
            result = LibraryResult(library)
            try:
                from contend.schedule.gate import check_redis_py

                check_redis_py()
                with quieted() as noise:
                    run_library(
                        library,
                        target,
                        options,
                        redis_server=request.get("redis_server"),
                        on_result=functools.partial(_emit_result, emit, library.key),
                        stop=interrupt.STOP,
                        result=result,
                        namespace=request.get("namespace"),
                        own_masters=request.get("own_masters", False),
                        confirm_attempts=request.get("confirm_attempts", CONFIRM_ATTEMPTS),
                    )
                result.noise = noise.summary()
            except ContendError as exc:
                result.skipped = str(exc)
            emit("row", **row_json(result))


def main() -> int:
    request = json.loads(sys.stdin.read())
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the library's prints go to standard error, not into the event stream
    restore = interrupt.install()
    try:
        serve(request, events)
    except interrupt.Interrupted as exc:
        return exc.code
    finally:
        restore()
    return 0


if __name__ == "__main__":
    sys.exit(main())
