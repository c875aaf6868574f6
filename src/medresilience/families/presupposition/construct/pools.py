"""One generator's example pools and the seeded draw of the examples its prompt shows.

How this reads the study (Cancer-Myth, sec. 3.2 and appendix B.1-B.2). The generator is prompted
with "K_h hard examples from the valid set S_valid, and K_e easy examples plus K_i invalid
examples from the invalid set S_invalid", with K_h = min(6, |S_valid|), K_e = min(2, |S_invalid|),
K_i = 4. S_valid starts as the two seed valid questions and grows by every question the responder
went along with (verifier score -1); S_invalid starts as the four seed negative examples
("init_neg_examples": questions that fail because they ask outright, hold no presupposition or
challenge a doctor, each with its reason) and grows by every question the responder corrected
(score 1, an "easy" example). With K_i = 4 equal to the number of seed negatives, and "in addition
to the fixed examples in Appendix B.1, we also inject randomly sampled examples", the reading taken
here is:

- hard: K_h = min(hard, |valid pool|) drawn from the whole valid pool (seeds and found questions);
- invalid: K_i = min(invalid, |seed negatives|) drawn from the seed negatives, each shown with its
  reason (with the defaults, all four every time);
- easy: K_e = min(easy, |easy pool|) drawn from the easy questions the loop found (none at first),
  shown among the invalid examples with the reason that an assistant corrected them at once.

The two invalid kinds are kept apart because their K caps are separate and only the seed negatives
carry a reason of their own. Pools are per generator (appendix B.1: "each generator model ...
keeps specific positive and negative sets"). Every draw is a seeded sample (seeding.rng_for of the
suite seed, the generator, the myth and the round), so the same pools give the same prompt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ....runtime.seeding import rng_for
from .seeds import InvalidExample, ValidExample


@dataclass(frozen=True)
class Counts:
    """How many examples of each kind a prompt shows at most (the study: 6, 2, 4)."""

    hard: int = 6
    easy: int = 2
    invalid: int = 4


@dataclass(frozen=True)
class Drawn:
    valid: tuple[ValidExample, ...]
    invalid: tuple[InvalidExample, ...]
    easy: tuple[ValidExample, ...]

    def questions(self) -> list[str]:
        return [*(e.question for e in self.valid), *(e.question for e in self.invalid), *(e.question for e in self.easy)]


@dataclass
class Pools:
    generator: str
    valid: list[ValidExample]
    invalid: tuple[InvalidExample, ...]
    easy: list[ValidExample] = field(default_factory=list)

    def draw(self, counts: Counts, seed: int, myth_id: str, round_no: int) -> Drawn:
        key = f"{self.generator}|{myth_id}|round-{round_no}"
        return Drawn(
            tuple(_sample(self.valid, counts.hard, seed, key, "hard")),
            tuple(_sample(self.invalid, counts.invalid, seed, key, "invalid")),
            tuple(_sample(self.easy, counts.easy, seed, key, "easy")),
        )

    def add(self, valid: Sequence[ValidExample] = (), easy: Sequence[ValidExample] = ()) -> None:
        self.valid.extend(valid)
        self.easy.extend(easy)

    def sizes(self) -> dict[str, int]:
        return {"valid": len(self.valid), "easy": len(self.easy), "invalid": len(self.invalid)}


def _sample(pool: Sequence, k: int, seed: int, key: str, purpose: str) -> list:
    k = min(max(k, 0), len(pool))
    return rng_for(seed, key, purpose).sample(list(pool), k) if k else []
