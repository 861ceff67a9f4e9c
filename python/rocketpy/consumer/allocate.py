"""Queue allocation among the members of a consumer group."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rocketpy.message import MessageQueue

#: ``strategy(group, current_client_id, sorted_queues, sorted_client_ids) -> my queues``
AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def allocate_averagely(
    group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
) -> list[MessageQueue]:
    """RocketMQ's ``AllocateMessageQueueAveragely``: contiguous blocks, the first
    ``len(mqs) % len(cids)`` clients taking one extra queue. Every client must compute it over
    the same sorted inputs, so the blocks partition the queues exactly."""
    if not mqs or current not in cids:
        return []
    index = cids.index(current)
    mod = len(mqs) % len(cids)
    if len(mqs) <= len(cids):
        size = 1
    elif mod > 0 and index < mod:
        size = len(mqs) // len(cids) + 1
    else:
        size = len(mqs) // len(cids)
    start = index * size if mod > 0 and index < mod else index * size + mod
    count = min(size, len(mqs) - start)
    return [mqs[(start + i) % len(mqs)] for i in range(max(0, count))]
