"""The wall clock of code that imported it by name (`from time import time_ns`).

The gate makes `time.time` and `time.time_ns` read a scheduled client's virtual wall clock
(skewed as the machine skews it). A library that bound the real function to a name of its own
when it was imported (pyrate-limiter's `from time import time_ns`) would read the real clock
still: it would see none of the time the machine lets pass, and a rate limiter that counts on
it would be blamed for refusing when its window had run out. While the gate is on, such names
in the modules outside the standard library and contend are bound to the gate's readers (which
read the real clock in threads that are not scheduled clients, as before), and put back after.
Only wall-clock readers: they do nothing but read, so no wait changes meaning.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

REAL_TIME_NS = time.time_ns

#: Modules already looked at (their names), and the names found bound to a real reader there.
_looked: set[str] = set()
_found: list[tuple[ModuleType, str, Callable[..., Any]]] = []
#: What `rebind` changed, to put back.
_bound: list[tuple[ModuleType, str, Callable[..., Any]]] = []
_SKIPPED = frozenset(getattr(sys, "stdlib_module_names", ())) | {"contend", "__main__"}


def _scan(readers: dict[int, Callable[..., Any]]) -> None:
    """Look at the modules imported since the last look for names bound to a real reader."""
    for name, module in list(sys.modules.items()):
        if name in _looked:
            continue
        _looked.add(name)
        if module is None or name.partition(".")[0] in _SKIPPED:
            continue
        try:
            members = list(vars(module).items())
        except TypeError:  # no __dict__
            continue
        for attr, value in members:
            if not attr.startswith("__") and id(value) in readers and callable(value):
                _found.append((module, attr, value))


def rebind(virtual: dict[Callable[..., Any], Callable[..., Any]]) -> None:
    """Bind every name found holding a real reader (a key of `virtual`) to its virtual one."""
    readers = {id(real): real for real in virtual}
    _scan(readers)
    for module, attr, real in _found:
        if getattr(module, attr, None) is real:
            setattr(module, attr, virtual[real])
            _bound.append((module, attr, real))


def restore() -> None:
    """Put back what `rebind` changed."""
    while _bound:
        module, attr, real = _bound.pop()
        setattr(module, attr, real)
