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
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paraphrase._filter import normalize_text
from eraudit_core.paraphrase._registry import register_generator
from eraudit_core.paraphrase._rules_lexicon import (
    BASE_VERBS,
    BE,
    CLAUSE_MARKERS,
    COMPOUND,
    DETERMINERS,
    DIRECT_FRAMES,
    DO,
    DO_NEG,
    EMBED_FRAMES,
    EMBED_PREFIXES,
    EMBED_SUFFIXES,
    EMBEDDING_CLAUSE,
    EXPLAIN_FRAMES,
    FUNCTION_STARTS,
    HOW_NOT_MANNER,
    IRREGULAR_PARTICIPLE_BASE,
    IRREGULAR_PAST,
    LEADING,
    MODAL_NEG,
    MODALS,
    PREDICATES,
    PRONOUNS,
    REGULAR_VERBS,
    TITLES,
    TRAILING_MARKERS,
    WH,
)

RULES_VERSION = "1"


@dataclass(frozen=True)
class _Parsed:
    lead: str  # leading adjunct without comma ("" if none)
    core: str  # the question proper, no final "?"
    trail: str  # trailing adjunct with its marker, no leading space ("" if none)
    is_question: bool


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    word = first.lower().strip("\"'“‘")
    keep = first[:1].isupper() and word not in FUNCTION_STARTS
    return text if keep else text[:1].lower() + text[1:]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _parse(question: str) -> _Parsed:
    text = " ".join(question.split())
    is_q = False
    if text.endswith("?"):
        text, is_q = text[:-1].rstrip(), True
    elif text.endswith(('?"', "?”")):
        text, is_q = text[:-2] + text[-1], True
    lead = ""
    m = LEADING.match(text)
    if m and len(m.group("lead").split()) <= 12 and m.group("core")[:1].isalpha():
        lead, text = m.group("lead"), m.group("core")
        text = _upper_first(text) if text.split(" ", 1)[0].lower() in FUNCTION_STARTS else text
    trail = ""
    if not lead:
        lowered = text.lower()
        best = -1
        for marker in TRAILING_MARKERS:
            pos = lowered.find(marker)
            if pos < 0 or len(text[:pos].split()) < 3:
                continue
            if marker == " if " and re.search(r"\b(ask|asked|asks|wonder|know|see)$", text[:pos]):
                continue
            if text[:pos].count('"') % 2 or text[:pos].count("“") > text[:pos].count("”"):
                continue  # inside a quotation
            if EMBEDDING_CLAUSE.search(" " + text[:pos].split(" ", 1)[1]):
                continue  # the clause may attach to an embedded verb: moving it could change scope
            rest = text[pos + len(marker) :]
            if marker.strip() not in CLAUSE_MARKERS and (
                len(rest.split()) > 6
                or EMBEDDING_CLAUSE.search(f" {rest} ")
                or re.search(r"\b(if|when|after|before|while)\b|ed\b", rest)
            ):
                continue  # a phrase marker must end the question with a short, verbless phrase
            if best < 0 or pos < best:
                best = pos
        if best >= 0:
            text, trail = text[:best], text[best + 1 :]
    return _Parsed(lead, text, trail, is_q)


def _third_person(verb: str) -> str:
    if verb == "have":
        return "has"
    if verb == "be":
        return "is"
    if re.search(r"(s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def _past(verb: str) -> str | None:
    if verb in IRREGULAR_PAST:
        return IRREGULAR_PAST[verb]
    if verb not in REGULAR_VERBS:
        return None
    if verb.endswith("e"):
        return verb + "d"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ied"
    if verb in {"stop", "plan", "drop", "ship", "grab"}:
        return verb + verb[-1] + "ed"
    return verb + "ed"


def _base_from_participle(word: str) -> str | None:
    if word in IRREGULAR_PARTICIPLE_BASE:
        return IRREGULAR_PARTICIPLE_BASE[word]
    if not word.endswith("ed"):
        return None
    for cand in (word[:-2], word[:-1], word[:-3], word[:-3] + "y"):
        if cand in BASE_VERBS:
            return cand
    return None


def _subject_span(words: list[str], start: int, verb_test: Any) -> int | None:
    """End index (exclusive) of the subject starting at `start`, or None when unsure.

    A subject is a pronoun, a capitalised name (titles and "X and Y" allowed, no possessive),
    or a determiner plus one word, and must be followed by a word passing `verb_test`.
    """
    if start >= len(words):
        return None
    w = words[start]
    end: int | None = None
    if w.lower() in PRONOUNS:
        end = start + 1
    elif w[:1].isupper() and w.lower() not in DETERMINERS and not w.endswith(("'s", "’s", "'")):
        end = start + 1
        while (
            end < len(words)
            and (words[end][:1].isupper() or words[end - 1] in TITLES)
            and not words[end].endswith(("'s", "’s"))
        ):
            end += 1
        if end + 1 < len(words) and words[end] == "and" and words[end + 1][:1].isupper():
            end += 2
    elif w.lower() in DETERMINERS and start + 1 < len(words):
        nxt = words[start + 1]
        if nxt.isalpha() and not nxt.endswith("s'"):
            end = start + 2
    if end is None or end >= len(words) or words[end - 1].endswith(("'s", "’s", "'")):
        return None
    return end if verb_test(words[end]) else None


def _several_sentences(core: str) -> bool:
    """'Who does X help? What does he do for them': an embedded form would merge the two."""
    if "?" in core or "!" in core:
        return True
    for m in re.finditer(r"(\S+)\.\s+[A-Z]", core):
        if m.group(1) + "." not in TITLES and not re.fullmatch(r"[A-Z]", m.group(1)):
            return True
    return False


def _is_compound(core: str) -> bool:
    """Two questions joined ("Who is X and what is their aim?"): rewriting one half is unsafe."""
    return COMPOUND.search(core) is not None


def _embedded(core: str) -> str | None:
    """The core question as an embedded clause ("why the author says ..."), or None if unsure."""
    words = core.split()
    if len(words) < 2 or _is_compound(core) or _several_sentences(core):
        return None
    first = words[0].lower()
    wh_len = 1
    if first == "how" and words[1].lower() in HOW_NOT_MANNER:
        wh_len = 2
        while wh_len < len(words) and words[wh_len].lower() not in BE | DO | MODALS:
            wh_len += 1
            if wh_len > 4:
                return None
    elif (
        first == "for"
        and core.lower().startswith("for what reason ")
        or first == "in"
        and core.lower().startswith("in what way ")
    ):
        wh_len = 3
    elif first not in WH:
        return None
    if wh_len >= len(words):
        return None
    wh = " ".join(words[:wh_len])
    wh = _lower_first(wh)
    aux = words[wh_len].lower()
    rest_i = wh_len + 1

    def lead_out(subj_end: int, new_verb: list[str]) -> str:
        subj = words[rest_i:subj_end]
        return " ".join([wh, *subj, *new_verb, *words[subj_end + 1 :]])

    if aux in DO | DO_NEG:
        end = _subject_span(words, rest_i, lambda v: v in BASE_VERBS)
        if end is None:
            return None
        verb = words[end]
        if aux in DO_NEG:
            return lead_out(end, [aux, verb])
        if aux == "does":
            inflected: str | None = _third_person(verb)
        elif aux == "did":
            inflected = _past(verb)
        else:
            inflected = verb
        return lead_out(end, [inflected]) if inflected else None
    if aux in BE | MODALS | MODAL_NEG:
        if first in ("what", "who", "which") and wh_len == 1:
            nxt = words[rest_i] if rest_i < len(words) else ""
            predicate = (  # noqa: E731 - a local test, named for reading
                lambda v: v.endswith(("ing", "ed", "en")) or v in PREDICATES or v in BASE_VERBS
            )
            # a determiner subject ("the most hated ...") is only delimited before a modal's verb
            by_shape = aux in MODALS | MODAL_NEG or nxt.lower() not in DETERMINERS
            end = _subject_span(words, rest_i, predicate) if by_shape else None
            if end is not None:
                return " ".join([wh, *words[rest_i:end], aux, *words[end:]])
            if aux in BE and first in ("what", "who") and " like " not in f" {core} ":
                starts_np = nxt.lower() in DETERMINERS or nxt[:1] in '"“'
                if starts_np or (nxt[:1].isupper() and nxt.endswith(("'s", "’s", "s'"))):
                    return " ".join([wh, *words[rest_i:], aux])  # "what X's mistake was"
            if nxt.lower() != "not" and (
                nxt.lower() in PRONOUNS | DETERMINERS or nxt[:1].isupper()
            ):
                return None  # an inverted subject we could not delimit
            return " ".join([wh, *words[wh_len:]])  # wh is the subject: "what is NOT true"
        end = _subject_span(
            words,
            rest_i,
            lambda v: v.endswith(("ing", "ed", "en")) or v in BASE_VERBS or v in PREDICATES,
        )
        if end is None:
            return None
        return " ".join([wh, *words[rest_i:end], aux, *words[end:]])
    # wh-word as subject: "What motivated X ...", "Who wanted ..."
    if wh_len == 1 and first in ("what", "who", "which") and _looks_finite(words[1]):
        return " ".join([wh, *words[1:]])
    if first in ("what", "which") and _is_subject_wh_phrase(words):
        return " ".join([wh, *words[1:]])
    return None


def _is_subject_wh_phrase(words: list[str]) -> bool:
    """'What portion of the journey was spent ...', 'Which effect of X makes ...': no inversion."""
    for i in range(1, min(len(words) - 1, 9)):
        w = words[i].lower()
        if w in DO | DO_NEG | MODALS | MODAL_NEG | PRONOUNS:
            return False
        if w in BE:
            nxt = words[i + 1].lower()
            return nxt.endswith(("ed", "en")) or nxt in IRREGULAR_PAST.values()
        if i >= 2 and _looks_finite(words[i]):
            return True
    return False


def _looks_finite(word: str) -> bool:
    w = word.lower()
    if w in BE | DO | MODALS | {"has", "have", "had"}:
        return w in {"had", "has"}
    return (
        w.endswith("ed")
        or w in IRREGULAR_PAST.values()
        or (w.endswith("s") and w[:-1] in BASE_VERBS)
        or (w.endswith("es") and w[:-2] in BASE_VERBS)
    )


def _core_variants(core: str) -> list[tuple[str, str | None]]:
    """Direct-question variants of the core with their embedded forms (None when unsafe)."""
    out: list[tuple[str, str | None]] = [(core, _embedded(core))]
    words = core.split()
    low = core.lower()
    if low.startswith("why "):
        alt = "For what reason " + core[4:]
        out.append((alt, _embedded(alt)))
        emb = _embedded(core)
        if emb:
            out.append(("What is the reason " + emb[4:], None))
    if (
        low.startswith("how ")
        and len(words) > 2
        and words[1].lower() in BE | DO | MODALS | DO_NEG
        and not re.search(r"\bfeel|\bfelt\b", low)
    ):
        alt = "In what way " + core[4:]
        out.append((alt, _embedded(alt)))
    m = re.match(r"^(What|Who|Which) (is|are|was|were|isn't|wasn't) (.+)$", core)
    if m and not low.startswith("which of the following") and not _is_compound(core):
        nxt = m.group(3).split()[0]
        if (nxt.lower() in DETERMINERS | {"not", "true", "false"} or nxt == "NOT") and (
            " like " not in f" {core} "
        ):
            alt = f"Which of the following {m.group(2)} {m.group(3)}"
            # not also embedded: stacking two rewrites drifts too far from the original's wording
            out.append((alt, None))
    if low.startswith("which of the following "):
        alt = "Which " + core[len("which of the following ") :]
        out.append((alt, _embedded(alt)))
    m = re.match(r"^(.+?) (is|are|was|were) (\w+) by whom$", core)
    if m:
        subj, be, part = m.groups()
        out.append((f"By whom {be} {_lower_first(subj)} {part}", None))
        base = _base_from_participle(part)
        if base:
            verb = _third_person(base) if be in ("is", "are") else part
            subj_obj = _lower_first(subj)
            out.append((f"Who {verb} {subj_obj}", f"who {verb} {subj_obj}"))
    return out


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
