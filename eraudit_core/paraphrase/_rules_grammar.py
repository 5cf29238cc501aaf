"""How the offline rule paraphraser (`_rules.py`) reads a question's shape: the split into a
leading adjunct, the question proper and a trailing clause; finding an inverted subject; verb
inflection; the embedded form ("why X says Y") and the direct-question variants of the core.

Logic only, kept apart from the rewrite assembly and the generator in `_rules.py` and from the
word lists in `_rules_lexicon.py`. When a shape is unsure, the form is skipped (None) rather
than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from eraudit_core.paraphrase._rules_lexicon import (
    BASE_VERBS,
    BE,
    CLAUSE_MARKERS,
    COMPOUND,
    DETERMINERS,
    DO,
    DO_NEG,
    EMBEDDING_CLAUSE,
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
