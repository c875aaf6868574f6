"""Source loaders: one module per dataset format, each turning a file into Items (streamed).
Families register their own layouts (a release that also carries probes is a family's suite
format, see `medresilience.family`).

    from medresilience.sources import load_items

    items = list(load_items("medqa/us_4options_test_even.jsonl"))   # format detected

Every bad row is an errors.InputError naming file, line and field."""

from __future__ import annotations

from .detect import FORMATS, detect_format, formats, load_items, register_format
from .medmcqa import medmcqa_item, read_medmcqa
from .medqa import medqa_item, read_medqa
from .mmlu import mmlu_subject, read_mmlu

__all__ = [
    "FORMATS",
    "detect_format",
    "formats",
    "load_items",
    "medmcqa_item",
    "medqa_item",
    "mmlu_subject",
    "read_medmcqa",
    "read_medqa",
    "read_mmlu",
    "register_format",
]
