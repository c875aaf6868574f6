"""Stable, seeded randomness: every random choice is derived from (suite seed, item id, purpose)
with a stable hash, so the same suite is rebuilt bit for bit on any machine."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def stable_hash(*parts: object) -> str:
    """SHA-256 hex of a canonical JSON encoding of the parts."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def rng_for(seed: int, item_id: str, purpose: str) -> random.Random:
    """A private RNG for one decision about one item."""
    return random.Random(int(stable_hash(seed, item_id, purpose)[:16], 16))


def sample_order(xs: Sequence[T], seed: int) -> list[T]:
    """xs in a seeded random order (Python's random.Random(seed).shuffle of a copy): its first N
    are a simple random sample of N, and a larger N keeps every member of a smaller one."""
    out = list(xs)
    random.Random(seed).shuffle(out)
    return out
