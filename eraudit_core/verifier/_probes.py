"""The fixed probe set: eight binary questions every registration asks (docs/design.md §3, §4).

One set, shared by the checks that need a checkpoint's answers before any audit: the
scoring-noise floor (the same probes scored along two paths) and the label-mass check (is the
label read where the model writes its answer). The questions are plain facts with one
unambiguous answer, so a sane checkpoint read at the right slot puts its mass on the labels.
The first one is `PROBE`, the single question the served backend re-asks at every load.
"""

from __future__ import annotations

from eraudit_core.types import Query
from eraudit_core.verifier._prompts import PROBE

PROBE_SET: tuple[Query, ...] = (
    PROBE,
    Query("probe-2", "How many legs does a spider have?", "Eight", "Six"),
    Query("probe-3", "Which planet is closest to the Sun?", "Mercury", "Neptune"),
    Query("probe-4", "What is the boiling point of water at sea level in Celsius?", "100", "50"),
    Query("probe-5", "Which animal is a mammal?", "A whale", "A shark"),
    Query("probe-6", "What is 7 multiplied by 8?", "56", "48"),
    Query("probe-7", "Which gas do plants take in for photosynthesis?", "Carbon dioxide", "Helium"),
    Query("probe-8", "In which season is it usually coldest in Norway?", "Winter", "Summer"),
)
