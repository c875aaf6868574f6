"""Source loaders: one module per dataset format, each turning a file into Items (streamed).
Families register their own layouts (a release that also carries probes is a family's suite
format, see `medresilience.family`).

    from medresilience.sources import load_items

    items = list(load_items("medqa/us_4options_test_even.jsonl"))   # format detected
    skips = Counter()
    items = list(load_items("hle/test.parquet", skips=skips))       # skips: reason -> rows left out

Every bad row is an errors.InputError naming file, line and field.

May import: family, records, registry, runtime."""

from __future__ import annotations

from .craftmd import read_craftmd
from .detect import FORMATS, detect_format, formats, load_items, register_format
from .freeform import freeform_item, read_freeform
from .hle import hle_choices, hle_item, read_hle
from .medbullets import medbullets_item, read_medbullets
from .medjourney import medjourney_item, read_medjourney
from .medmcqa import medmcqa_item, read_medmcqa
from .medqa import medqa_item, read_medqa
from .medxpertqa import inline_choices, medxpertqa_item, read_medxpertqa
from .mmlu import mmlu_subject, read_mmlu
from .pubmedqa import pubmedqa_item, read_pubmedqa
from .symcat import read_symcat, symcat_item

__all__ = [
    "FORMATS",
    "detect_format",
    "formats",
    "freeform_item",
    "hle_choices",
    "hle_item",
    "inline_choices",
    "load_items",
    "medbullets_item",
    "medjourney_item",
    "medmcqa_item",
    "medqa_item",
    "medxpertqa_item",
    "mmlu_subject",
    "pubmedqa_item",
    "read_craftmd",
    "read_freeform",
    "read_hle",
    "read_medbullets",
    "read_medjourney",
    "read_medmcqa",
    "read_medqa",
    "read_medxpertqa",
    "read_mmlu",
    "read_pubmedqa",
    "read_symcat",
    "register_format",
    "symcat_item",
]
