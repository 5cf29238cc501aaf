"""Offline rule-based paraphrases for the demo: structural rewrites of question forms.

Why it exists: the demo must run with no network and no strong model, and the audit still needs
search and test sets. This generator rewrites the *form* of a question, never its content words:

* interrogative form: direct question <-> embedded question ("Why does X say Y?" ->
  "Can you tell me why X says Y?"), with do-support undone and the verb inflected;
* wh-phrase rewrites that keep inversion: "Why" -> "For what reason", "How" (manner) ->
  "In what way", "Why ...?" -> "What is the reason ...?", "What is ...?" -> "Which of the
  following is ...?" (the verifier always sees the two options);
* voice: "X is greeted by whom?" <-> "By whom is X greeted?" / "Who greets X?";
* clause reordering: a trailing temporal/conditional clause ("... when she met Y", "... if Z",
  "... in the end") is fronted, and a leading one moved to the end;
* attribution framing that makes the reading-comprehension scope explicit ("According to the
  text, ...", "..., based on the passage?") and question framings ("Here is a question about the
  text: ...").

These transforms compose. No synonym swaps of content words are made and nothing about the answer
is added.

Limits (also in data/paraphrases/README.md): the rules cover common English question shapes;
questions outside them (sentence stems such as "Joey's story was", compound questions, yes/no
questions) get only framing variants, so fewer rewrites. The subject of an inverted question is
found by shape (pronoun, capitalised name, "the" + noun before a known verb); when unsure the
rule is skipped rather than guessed. Variants differ from each other mostly in framing, so the
rule distribution is much narrower than an LLM's: bounds certified on it say nothing about
deeper rewordings. Use an endpoint generator for real audits.

This module assembles the rewrites and registers the generator; reading a question's shape is
`_rules_grammar.py`, the word lists and frames `_rules_lexicon.py`.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._filter import normalize_text
from eraudit_core.paraphrase._registry import register_generator
from eraudit_core.paraphrase._rules_grammar import (
    _core_variants,
    _lower_first,
    _parse,
    _upper_first,
)
from eraudit_core.paraphrase._rules_lexicon import (
    DIRECT_FRAMES,
    EMBED_FRAMES,
    EMBED_PREFIXES,
    EMBED_SUFFIXES,
    EXPLAIN_FRAMES,
)

RULES_VERSION = "1"


def rule_rewrites(question: str) -> list[tuple[str, str]]:
    """Every rewrite the rules can make of `question`, as ``(family, text)``, original excluded.

    Families (``a``/``b``) split the framing vocabulary so two rule generators can draw from
    different distributions.
    """
    parsed = _parse(question)
    core_variants = _core_variants(parsed.core)
    has_attribution = re.search(r"\baccording to\b|\bbased on\b", question, re.I) is not None
    results: list[tuple[str, str]] = []

    def with_clauses(core: str) -> list[str]:
        """The core with the adjunct clause before and after it (both orders)."""
        if parsed.lead:
            lead = parsed.lead
            lead_low = _lower_first(lead)
            return [f"{lead}, {_lower_first(core)}", f"{core} {lead_low}"]
        if parsed.trail:
            return [f"{core} {parsed.trail}", f"{_upper_first(parsed.trail)}, {_lower_first(core)}"]
        return [core]

    q_end = "?" if parsed.is_question else ""
    for core, emb in core_variants:
        for body in with_clauses(core):
            body = _upper_first(body)
            direct = body + q_end
            results.append(("ab", direct))
            if has_attribution:
                continue
            for family, tmpl in DIRECT_FRAMES:
                if not parsed.is_question and "{s}" in tmpl:
                    continue
                results.append((family, tmpl.format(q=_lower_first(direct), Q=direct, s=body)))
        if emb is None or not parsed.is_question:
            continue
        emb_bodies = [emb]
        if parsed.lead:
            emb_bodies = [f"{emb} {_lower_first(parsed.lead)}"]
        elif parsed.trail:
            emb_bodies = [f"{emb} {parsed.trail}"]
        explains = (
            EXPLAIN_FRAMES if re.match(r"(why|how|for what reason|in what way) ", emb) else ()
        )
        for eb in emb_bodies:
            for family, tmpl in (*EMBED_FRAMES, *explains):
                text = tmpl.format(e=eb)
                results.append((family, text))
                if has_attribution:
                    continue
                for pfam, prefix in EMBED_PREFIXES:
                    if pfam == family:
                        results.append((family, prefix + _lower_first(text)))
                for sfam, suffix in EMBED_SUFFIXES:
                    if sfam != family:
                        results.append((family, tmpl.format(e=eb + suffix)))
            if parsed.trail and not parsed.lead:
                for family, tmpl in EMBED_FRAMES[:2]:
                    results.append(
                        (
                            family,
                            f"{_upper_first(parsed.trail)}, " + _lower_first(tmpl.format(e=emb)),
                        )
                    )
    seen = {normalize_text(question)}
    unique: list[tuple[str, str]] = []
    for family, text in results:
        text = " ".join(text.split())
        key = normalize_text(text)
        if key not in seen:
            seen.add(key)
            unique.append((family, text))
    return unique


@register_generator("rules", offline=True)
class RuleParaphraseGenerator:
    """Offline rule-based rewrites of question forms (demo only: structural, narrow, labelled)."""

    kind = "rules"
    version = RULES_VERSION

    def __init__(
        self,
        name: str = "rules",
        seed: int = 0,
        families: str = "ab",
        part: int | Sequence[int] = 0,
        parts: int = 1,
    ) -> None:
        if not families or set(families) - {"a", "b"}:
            raise InputError(
                f"rules generator: families must be 'a', 'b' or 'ab', got {families!r}"
            )
        taken = [part] if isinstance(part, int) else list(part)
        if (
            parts < 1
            or not taken
            or len(set(taken)) != len(taken)
            or not all(isinstance(i, int) and 0 <= i < parts for i in taken)
        ):
            raise InputError(
                "rules generator: part must be one bucket or distinct buckets with "
                f"0 <= part < parts, got part={part!r}, parts={parts}"
            )
        self._name = name
        self.seed = int(seed)
        self.families = families
        # one bucket stays an int, so the provenance of single-part sets reads as before
        self.part: int | list[int] = part if isinstance(part, int) else taken
        self._taken = frozenset(taken)
        self.parts = int(parts)

    @property
    def name(self) -> str:
        return self._name

    def settings(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "families": self.families,
            "part": self.part,
            "parts": self.parts,
        }

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        """A seeded shuffle of the rewrites in this generator's families and parts; the first `n`.

        `parts` splits the rewrites into buckets by a hash of their normalised text and `part`
        names the bucket (or buckets) this generator owns, so generators owning different
        buckets are disjoint by construction and each gets a fixed share of every question's
        rewrites (the bundled search and test sets, and the concealed arm's training split).
        """
        pool = [
            t
            for fam, t in rule_rewrites(question)
            if set(fam) & set(self.families) and _part_of(t, self.parts) in self._taken
        ]
        rng = random.Random(f"{self.seed}:{pair_id}")
        rng.shuffle(pool)
        return pool[: max(0, n)]


def _part_of(text: str, parts: int) -> int:
    digest = hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) % parts
