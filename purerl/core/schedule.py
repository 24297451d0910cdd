"""Where a run's chunks end: their lengths, and the chunks after which it saves a checkpoint.

Each distinct chunk length is a compiled program, so plans keep to one length (two at most)
wherever they can; chunks end where the run must act between them: at every checkpoint interval
and at every evaluation (``purerl.core.loop`` runs the plan).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from purerl.core.loop import CheckpointPolicy


def plan_chunks(
    num_updates: int,
    updates_per_chunk: int | None,
    target_chunks: int = 20,
    checkpoint_every: int | None = None,
    start: int = 0,
) -> list[int]:
    """Chunk lengths covering updates ``start`` to ``num_updates`` (a resumed run starts later).

    Each distinct length costs a compile, so without an explicit size a divisor of
    ``num_updates`` near ``num_updates / target_chunks`` is preferred (one length). Failing
    that, a smaller divisor, as long as the run stays within ``4 * target_chunks`` chunks: a
    chunk costs about a millisecond on the host, a second compiled length seconds. Only then
    does the run end with one shorter chunk. With ``checkpoint_every`` the default size is its
    largest divisor not above that target, so chunks end at every checkpoint.
    """
    if updates_per_chunk is None:
        target = max(1, math.ceil(num_updates / target_chunks))
        if checkpoint_every:
            limit = min(target, checkpoint_every)
            updates_per_chunk = max(d for d in divisors(checkpoint_every) if d <= limit)
        else:
            candidates = divisors(num_updates)
            near = [d for d in candidates if target // 2 <= d <= 2 * target]
            most = 4 * target_chunks
            smaller = [d for d in candidates if d < target and num_updates // d <= most]
            if near:
                updates_per_chunk = min(near, key=lambda d: abs(d - target))
            else:
                updates_per_chunk = max(smaller, default=target)
    remaining = num_updates - start
    if remaining <= 0:
        return []
    size = min(updates_per_chunk, remaining)
    full, rest = divmod(remaining, size)
    return [size] * full + ([rest] if rest else [])


def plan_evaluated_chunks(
    num_updates: int,
    updates_per_chunk: int | None,
    eval_every: int,
    checkpoint_every: int | None = None,
    start: int = 0,
    target_chunks: int = 20,
) -> list[int]:
    """Chunk lengths from ``start`` of a run that evaluates every ``eval_every`` updates: every
    multiple of it ends a chunk.

    Without an explicit size, chunks are a divisor of ``eval_every`` (and of ``checkpoint_every``)
    nearest ``num_updates / target_chunks`` by ratio, so one length (two when it does not
    divide ``num_updates``) serves the whole run. A resumed run keeps the uninterrupted run's
    chunk ends, after one chunk that reaches the first of them.
    """
    if updates_per_chunk is None:
        target = max(1.0, num_updates / target_chunks)
        common = math.gcd(eval_every, checkpoint_every or 0)
        updates_per_chunk = min(divisors(common), key=lambda d: abs(math.log(d / target)))
    ends = np.cumsum(plan_chunks(num_updates, updates_per_chunk))
    later = [int(end) for end in ends if end > start]
    lengths = [b - a for a, b in zip([start, *later[:-1]], later, strict=True)]
    return cut_at_multiples(lengths, start, eval_every)


def cut_at_multiples(lengths: list[int], start: int, every: int) -> list[int]:
    """``lengths`` (chunks from update ``start``) cut so that a chunk ends at every multiple of
    ``every``."""
    ends, end = set(), start
    for length in lengths:
        end += length
        ends.add(end)
    first = (start // every + 1) * every
    ends.update(range(first, end + 1, every))
    cuts = sorted(ends)
    return [b - a for a, b in zip([start, *cuts[:-1]], cuts, strict=True)]


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending, in ``O(sqrt(n))``."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def checkpoint_due(
    policy: CheckpointPolicy, before: int, after: int, total: int, seconds_since_save: float
) -> bool:
    """Whether a chunk ending at ``after`` (from ``before``) gets a checkpoint."""
    if after >= total:
        return True
    every = policy.every_updates
    if every and after // every > before // every:
        return True
    return policy.every_seconds is not None and seconds_since_save >= policy.every_seconds
