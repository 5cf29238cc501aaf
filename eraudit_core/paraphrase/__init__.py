"""Paraphrases of hidden questions (docs/design.md §5): generators, the validity filter, sets.

Generators (file, OpenAI-compatible endpoint, local Hugging Face model, offline rules) are
registered by name (`available_generators`, `create_generator`); every candidate passes
`filter_paraphrases`; `build_paraphrase_sets` makes disjoint search and test sets.
"""

from __future__ import annotations

from eraudit_core.paraphrase._demo_sets import (
    DEMO_RULE_BUCKETS,
    DEMO_RULE_SETS,
    DEMO_SEARCH,
    DEMO_TESTS,
    DEMO_TRAINING,
    demo_rule_generator,
)
from eraudit_core.paraphrase._files import (
    FileParaphraseGenerator,
    load_paraphrase_file,
    read_paraphrase_candidates,
    write_paraphrase_file,
)
from eraudit_core.paraphrase._filter import (
    FILTER_VERSION,
    CosineFn,
    FilterConfig,
    FilterResult,
    Rejection,
    answer_leak,
    filter_paraphrases,
    normalize_text,
)
from eraudit_core.paraphrase._registry import (
    GeneratorSpec,
    ParaphraseGenerator,
    available_generators,
    create_generator,
    generator_provenance,
    register_generator,
)
from eraudit_core.paraphrase._sets import (
    ParaphraseSets,
    build_paraphrase_sets,
    check_disjoint,
    store_paraphrase_sets,
)

__all__ = [
    "CosineFn",
    "DEMO_RULE_BUCKETS",
    "DEMO_RULE_SETS",
    "DEMO_SEARCH",
    "DEMO_TESTS",
    "DEMO_TRAINING",
    "FILTER_VERSION",
    "FileParaphraseGenerator",
    "FilterConfig",
    "FilterResult",
    "GeneratorSpec",
    "ParaphraseGenerator",
    "ParaphraseSets",
    "Rejection",
    "answer_leak",
    "available_generators",
    "build_paraphrase_sets",
    "check_disjoint",
    "create_generator",
    "demo_rule_generator",
    "filter_paraphrases",
    "generator_provenance",
    "load_paraphrase_file",
    "normalize_text",
    "read_paraphrase_candidates",
    "register_generator",
    "store_paraphrase_sets",
    "write_paraphrase_file",
]
