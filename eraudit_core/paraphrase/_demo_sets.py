"""How the bundled demo divides the rule generator's rewrites among its uses (docs/design.md §10).

Every question's rule rewrites fall into `DEMO_RULE_BUCKETS` buckets by a hash of their
normalised text; each named set owns some buckets, so the sets are disjoint by construction
whatever the question. Three sets are the audit's (the search set and two test pools, in
`data/paraphrases/`); the fourth, `rules-train`, is the concealed adapter's training split and
is never audited: the paper's search and test use fresh paraphrases not used in adaptation.
The shares follow the measured yield (median 41 valid rewrites a question): the test pools
get the most, so most pairs can reach a target such as p* = 0.8 at confidence 0.95 (n* = 14).
"""

from __future__ import annotations

from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._registry import ParaphraseGenerator, create_generator

DEMO_RULE_BUCKETS = 9
DEMO_SEARCH = "rules-search"
DEMO_TESTS = ("rules-a", "rules-b")
DEMO_TRAINING = "rules-train"
# name -> rules generator settings (seed of its shuffle, the buckets it owns)
DEMO_RULE_SETS: dict[str, dict[str, Any]] = {
    DEMO_SEARCH: {"seed": 1, "part": [0, 1]},
    DEMO_TESTS[0]: {"seed": 2, "part": [2, 3, 4]},
    DEMO_TESTS[1]: {"seed": 3, "part": [5, 6, 7]},
    DEMO_TRAINING: {"seed": 4, "part": 8},
}


def demo_rule_generator(name: str) -> ParaphraseGenerator:
    """The rules generator of one of the demo's sets (see `DEMO_RULE_SETS`)."""
    if name not in DEMO_RULE_SETS:
        raise InputError(f"demo rule set {name!r}: choose one of {sorted(DEMO_RULE_SETS)}")
    settings = DEMO_RULE_SETS[name]
    return create_generator("rules", name=name, families="ab", parts=DEMO_RULE_BUCKETS, **settings)
