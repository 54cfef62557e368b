"""KNOWN-BAD: the seed's final `register`, faithful, on the single-database layout.

It wraps the naive steps in `client.transaction(f, counter)`, which looks safe
and passed the seed's tests, but is not:

* `pipe.incr` runs at once: before `pipe.multi()` a watching pipeline executes
  each command immediately, so nothing is queued inside MULTI;
* the existence check and the HSETNX calls go through `self.client`, other
  connections than the pipeline's, so WATCH protects none of them.

Two clients registering one name both read "absent", both INCR, and the loser's
HSETNX fails: "Failed to register", counter 2. Its own INCR also dirties the
watched counter, so EXEC always aborts once and `transaction` calls `f` again;
that retry is what makes the serial tests pass.
"""

from __future__ import annotations

from typing import Any

import redis

from contend.impl.registry.base import RegistrationError, Registry, check_name


class SeedTransactionRegistry(Registry):
    strategy = "seed_transaction"

    def register(self, name: str) -> int:
        name = check_name(name)

        def attempt(pipe: redis.client.Pipeline) -> int:
            index: Any = self.client.hget(self.keys.ids, name)
            if index is None:
                index = pipe.incr(self.keys.counter)
                if not self.client.hsetnx(self.keys.ids, name, index):
                    raise RegistrationError(
                        f"Failed to register: key={self.keys.ids}, name={name}, value={index}"
                    )
                if not self.client.hsetnx(self.keys.names, index, name):
                    raise RegistrationError(
                        f"Failed to register: key={self.keys.names}, id={index}, name={name}"
                    )
            return int(index)

        result: Any = self.client.transaction(attempt, self.keys.counter, value_from_callable=True)  # type: ignore[arg-type]
        return int(result)
