"""The issue's bar for the demo generator: on the first 20 bundled QuALITY-H hidden questions,
asking the rule generator for 30 paraphrases yields at least 20 distinct valid ones each."""

from __future__ import annotations

from eraudit_core.paraphrase import create_generator, filter_paraphrases, normalize_text
from eraudit_core.store import load_bundled_benchmark


def test_rules_yield_20_valid_paraphrases_on_20_bundled_questions() -> None:
    gen = create_generator("rules")
    for pair in load_bundled_benchmark().pairs[:20]:
        cands = gen.generate(pair.pair_id, pair.hidden.question, 30)
        res = filter_paraphrases(pair.pair_id, pair.hidden, cands, gen.name)
        assert len(res.accepted) >= 20, (pair.hidden.question, res.rejected)
        assert len({normalize_text(t) for t in res.accepted}) == len(res.accepted)
        assert min(res.cosines) >= 0.8
