"""Queue allocation among the members of a consumer group (RocketMQ's
``AllocateMessageQueueStrategy`` implementations). Every member computes its share from the
same sorted queue and client-id lists, so the shares partition the queues exactly; the
algorithms match RocketMQ's, so Java and Python members of one group agree."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence

from rocketpy.message import MessageQueue

#: ``strategy(group, current_client_id, sorted_queues, sorted_client_ids) -> my queues``
AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def allocate_averagely(
    group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragely``: contiguous blocks, the first ``len(mqs) % len(cids)``
    clients taking one extra queue."""
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


def allocate_averagely_by_circle(
    group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragelyByCircle``: queue i goes to client ``i % len(cids)``."""
    if not mqs or current not in cids:
        return []
    return list(mqs[cids.index(current) :: len(cids)])


def _java_mq_string(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def _md5_hash(key: str) -> int:
    """RocketMQ's ``MD5Hash``: the first four bytes of the MD5 digest, as a non-negative long."""
    digest = hashlib.md5(key.encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


def consistent_hash(virtual_nodes: int = 10) -> AllocateStrategy:
    """``AllocateMessageQueueConsistentHash``: clients on a hash ring (``virtual_nodes`` points
    each, keyed ``clientId-i``); a queue belongs to the first client point at or after its
    hash. Adding or removing a client moves few queues."""

    def allocate(
        group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
    ) -> list[MessageQueue]:
        if not mqs or current not in cids:
            return []
        ring = sorted((_md5_hash(f"{cid}-{i}"), cid) for cid in cids for i in range(virtual_nodes))
        keys = [h for h, _ in ring]
        mine = []
        for mq in mqs:
            at = bisect.bisect_left(keys, _md5_hash(_java_mq_string(mq)))
            if ring[at % len(ring)][1] == current:
                mine.append(mq)
        return mine

    return allocate


def by_config(queues: Iterable[MessageQueue]) -> AllocateStrategy:
    """``AllocateMessageQueueByConfig``: this client consumes exactly ``queues``."""
    fixed = list(queues)

    def allocate(
        group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
    ) -> list[MessageQueue]:
        return [mq for mq in fixed if mq in mqs]

    return allocate


def by_machine_room(rooms: Iterable[str]) -> AllocateStrategy:
    """``AllocateMessageQueueByMachineRoom``: broker names are ``room@name``; only queues of
    brokers in ``rooms`` are consumed, shared averagely."""
    wanted = set(rooms)

    def allocate(
        group: str, current: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
    ) -> list[MessageQueue]:
        if current not in cids:
            return []
        index = cids.index(current)
        pre = [
            mq for mq in mqs if len(parts := mq.broker_name.split("@")) == 2 and parts[0] in wanted
        ]
        mod, rem = divmod(len(pre), len(cids))
        mine = pre[mod * index : mod * index + mod]
        if rem > index:
            mine.append(pre[index + mod * len(cids)])
        return mine

    return allocate
