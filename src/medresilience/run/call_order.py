"""The order a model's answer calls are queued in: the units of one item (its clean question and
its probes, which repeat the question and options and differ in what follows them) stay together,
so a server that caches prompt prefixes per slot computes each item's prefix once.

With `width` calls in flight (the model's concurrency), the items are taken `width` at a time and
their units queued in rounds: every item's first unit, then every item's second, ... The calls in
flight then belong to different items, each on its own server slot, and an item's next unit finds
its prefix in the slot that served the one before (the embedded server gives a request the idle
slot whose cached prompt shares most with it). With one call at a time the order is the plan's:
item by item. Which calls are made never changes; only when."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["in_rounds"]

T = TypeVar("T")


def in_rounds(units: Sequence[T], width: int, item_of: Callable[[T], str]) -> list[T]:
    """`units` (each item's units adjacent, as planned) reordered as the module docstring says."""
    if width <= 1:
        return list(units)
    groups: list[list[T]] = []
    for u in units:
        if groups and item_of(groups[-1][0]) == item_of(u):
            groups[-1].append(u)
        else:
            groups.append([u])
    out: list[T] = []
    for start in range(0, len(groups), width):
        batch = groups[start : start + width]
        for r in range(max(len(g) for g in batch)):
            out += [g[r] for g in batch if r < len(g)]
    return out
