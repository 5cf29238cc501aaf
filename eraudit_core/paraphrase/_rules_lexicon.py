"""Word lists and frames of the offline rule-based paraphraser (see `_rules.py`).

Data, not logic: the closed-class words, irregular verbs and framing templates the rules use to
find a question's shape and rewrite its form without touching its content words.
"""

from __future__ import annotations

import re

WH = ("what", "who", "whom", "which", "why", "how", "where", "when", "whose")
BE = {"is", "are", "was", "were"}
DO = {"do", "does", "did"}
DO_NEG = {"don't", "doesn't", "didn't"}
MODALS = {"can", "could", "will", "would", "should", "might", "may", "must"}
MODAL_NEG = {"can't", "couldn't", "won't", "wouldn't", "shouldn't", "isn't", "aren't", "wasn't"}
MODAL_NEG |= {"weren't"}
PRONOUNS = {"he", "she", "they", "it", "we", "you", "i"}
DETERMINERS = {"the", "a", "an", "his", "her", "their", "its", "this", "that", "these", "those"}
TITLES = {"Mr.", "Mrs.", "Ms.", "Dr.", "Sen.", "St.", "Sgt.", "Capt.", "Col.", "Gen.", "Prof."}
# Base verbs the subject finder trusts after "the <noun>", with irregular past forms.
IRREGULAR_PAST = {
    "be": "was",
    "become": "became",
    "begin": "began",
    "bring": "brought",
    "build": "built",
    "buy": "bought",
    "catch": "caught",
    "choose": "chose",
    "come": "came",
    "do": "did",
    "feel": "felt",
    "find": "found",
    "get": "got",
    "give": "gave",
    "go": "went",
    "have": "had",
    "hear": "heard",
    "hold": "held",
    "keep": "kept",
    "know": "knew",
    "lead": "led",
    "leave": "left",
    "let": "let",
    "lose": "lost",
    "make": "made",
    "mean": "meant",
    "meet": "met",
    "pay": "paid",
    "put": "put",
    "read": "read",
    "run": "ran",
    "say": "said",
    "see": "saw",
    "sell": "sold",
    "send": "sent",
    "set": "set",
    "sit": "sat",
    "sleep": "slept",
    "speak": "spoke",
    "spend": "spent",
    "stand": "stood",
    "steal": "stole",
    "take": "took",
    "teach": "taught",
    "tell": "told",
    "think": "thought",
    "throw": "threw",
    "understand": "understood",
    "wear": "wore",
    "win": "won",
    "write": "wrote",
    "beat": "beat",
    "fight": "fought",
    "forget": "forgot",
    "hide": "hid",
    "fly": "flew",
    "eat": "ate",
    "drink": "drank",
    "break": "broke",
    "grow": "grew",
    "rise": "rose",
    "shoot": "shot",
}
REGULAR_VERBS = set(
    """accept act agree allow answer appear arrive ask attack avoid believe blame call care
    change claim consider convince create cry decide describe destroy die discover end enjoy
    escape expect explain fail fear follow help hope hunt ignore imply insist intend invent
    join kill land laugh learn like live look love mention miss move need notice offer open
    order plan play point prefer pretend prove push reach realize receive refer refuse
    remember report return save search seem share show start stay stop study suggest support
    suspect talk greet travel trust try turn use view visit volunteer wait walk want warn watch wish
    work worry characterize deny view react respond represent value""".split()  # noqa: SIM905
)
BASE_VERBS = REGULAR_VERBS | set(IRREGULAR_PAST)
IRREGULAR_PARTICIPLE_BASE = {"given": "give", "taken": "take", "seen": "see", "written": "write"}

# Framings: (family, template). {q} is the direct question with its first letter lowered,
# {Q} unchanged, {s} the direct question without its final "?".
DIRECT_FRAMES = (
    ("a", "According to the text, {q}"),
    ("b", "According to the passage, {q}"),
    ("a", "Based on the text, {q}"),
    ("b", "Based on the passage, {q}"),
    ("a", "{s}, according to the text?"),
    ("b", "{s}, based on the passage?"),
    ("a", "Here is a question about the text: {Q}"),
    ("b", "A question about the passage: {Q}"),
    ("b", "In the passage, {q}"),
    ("a", "In the text, {q}"),
    ("b", "{s}, according to the passage?"),
    ("a", "{s}, based on the text?"),
    ("a", "Going by the text, {q}"),
    ("b", "Going by the passage, {q}"),
)
# Embedded-question frames: {e} is the embedded question (lower-case start, no "?").
EMBED_FRAMES = (
    ("a", "Can you tell me {e}?"),
    ("b", "Could you tell me {e}?"),
    ("a", "Do you know {e}?"),
    ("b", "I'd like to know {e}."),
    ("a", "Please say {e}."),
    ("b", "Tell me {e}."),
    ("a", "I want to know {e}."),
    ("b", "Would you tell me {e}?"),
    ("b", "I am asking {e}."),
)
# Asking to *explain* suits only why/how questions; for who/what it changes the request.
EXPLAIN_FRAMES = (("a", "Could you explain {e}?"), ("b", "Please explain {e}."))
EMBED_PREFIXES = (("a", "Based on the text, "), ("b", "Based on the passage, "))
EMBED_SUFFIXES = (("a", ", according to the text"), ("b", ", according to the passage"))

TRAILING_MARKERS = (
    " when ",
    " if ",
    " after ",
    " before ",
    " while ",
    " during ",
    " in the end",
    " at the end of ",
    " by the end of ",
    " at the beginning of ",
    " in the beginning of ",
    " in the story",
    " in the article",
    " in the passage",
    " throughout the story",
    " upon ",
    " once ",
)
LEADING = re.compile(
    r"^(?P<lead>(?:Upon|By the end of|At the end of|In the end|At first|In the beginning|"
    r"For|When|If|After|Before|During|While|Once)\b[^,?]{0,80}), (?P<core>.+)$"
)
EMBEDDING_CLAUSE = re.compile(
    r" (that|who|which|whom|whose|what|to|because|whether|why|how|where) |,", re.I
)
CLAUSE_MARKERS = {"when", "if", "after", "before", "while", "once"}
HOW_NOT_MANNER = {"many", "much", "long", "often", "far", "old", "likely", "big", "soon"}


FUNCTION_STARTS = (
    set(WH)
    | BE
    | DO
    | DO_NEG
    | MODALS
    | MODAL_NEG
    | DETERMINERS
    | {
        "in",
        "on",
        "at",
        "for",
        "upon",
        "if",
        "when",
        "of",
        "by",
        "after",
        "before",
        "during",
        "while",
        "once",
        "according",
        "approximately",
        "had",
        "has",
        "have",
        "does",
        "please",
        "tell",
        "can",
        "could",
        "do",
        "would",
        "here",
    }
)


COMPOUND = re.compile(
    r"\band (what|who|whom|how|why|where|when|which|is|are|was|were|does|did|do)\b", re.I
)


PREDICATES = {"so", "not", "able", "upset", "unhappy", "significant", "afraid", "important"}
