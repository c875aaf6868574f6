"""Source loaders: one module per dataset format, each turning a file into Items (streamed), and
the MedMisBench-release reader / writer that also carries context bundles (-> a Suite).

    from medresilience.sources import load_items, read_release, write_release

    items = list(load_items("medqa/us_4options_test_even.jsonl"))   # format detected
    suite = read_release("basic_medicine_release.jsonl", seed=0)      # items + probes

Every bad row is an errors.InputError naming file, line and field."""

from __future__ import annotations

from .detect import FORMATS, detect_format, load_items
from .medmcqa import medmcqa_item, read_medmcqa
from .medmisbench import (
    RELEASE_ALIASES,
    ReleaseRow,
    iter_release,
    read_release,
    read_release_items,
    release_row,
    release_rows,
    write_release,
)
from .medqa import medqa_item, read_medqa
from .mmlu import mmlu_subject, read_mmlu

__all__ = [
    "FORMATS",
    "detect_format",
    "load_items",
    "read_medqa",
    "medqa_item",
    "read_medmcqa",
    "medmcqa_item",
    "read_mmlu",
    "mmlu_subject",
    "RELEASE_ALIASES",
    "ReleaseRow",
    "release_row",
    "iter_release",
    "read_release_items",
    "read_release",
    "release_rows",
    "write_release",
]
