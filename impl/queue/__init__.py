"""Work queues: a job put is taken by one consumer at a time and done once it is acked.

Every module offers the queue protocol through `factory(client, name)`; which ones are
known-bad, and why, is said in `impl.catalog`.
"""

from contend.impl.queue.base import BadItem, QueueError
from contend.impl.queue.lease_list import BlindReaperQueue, LeaseListQueue, PeekThenRemoveQueue
from contend.impl.queue.pop import PopQueue
from contend.impl.queue.stream import StreamQueue
from contend.impl.queue.value_list import ValueQueue

__all__ = [
    "BadItem",
    "BlindReaperQueue",
    "LeaseListQueue",
    "PeekThenRemoveQueue",
    "PopQueue",
    "QueueError",
    "StreamQueue",
    "ValueQueue",
]
