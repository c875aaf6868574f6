"""Building false-presupposition suites: the adversarial generator / responder / verifier loop over
myth records, categorisation, balancing and the optional correction checker
(`medres build presupposition`). `build_presupposition` is the entry point."""

from __future__ import annotations

from .build import PresuppositionBuildOptions, build_presupposition
from .seeds import Seeds, load_seeds, package_seeds

__all__ = ["PresuppositionBuildOptions", "Seeds", "build_presupposition", "load_seeds", "package_seeds"]
