"""Home's story on the shipped demo, as the page writes it (streamlit AppTest): one lead
about one pair, which says first that the debate arms' adaptation did not take; the
sentences under it name the same pair; the control is labelled as the control; the debate
arms show "one seed"; no claim that standard evaluation approves the concealed arm (its
canonical hidden accuracy is below the honest arm's on these 40 pairs); and no page writes a
verdict word in capitals. Every number checked here is read from the same stored runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eraudit_core.store import Store

ROOT = Path(__file__).resolve().parents[2]
CAPITALS = re.compile(r"\b(DEGRADED|CERTIFIED|PASSED|INCONCLUSIVE)\b")


def _texts(at) -> list[str]:  # type: ignore[no-untyped-def]
    """Every markdown, caption and text element, markdown escapes removed."""
    return [
        e.value.replace("\\", "")
        for kind in ("markdown", "caption", "text", "header", "subheader", "title")
        for e in getattr(at, kind)
    ]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests._demo_store import demo_store_copy

    return demo_store_copy(tmp_path_factory.mktemp("home") / "studio.duckdb")


@pytest.mark.slow  # the whole shipped demo, imported once per process (tests/_demo_store.py): 90 s
@pytest.mark.timeout(1800)  # the import, then Home, Results and Share: 4-5 min idle, more loaded
def test_home_tells_one_true_story(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from eraudit_core.demo import ensure_demo
    from eraudit_core.present import standard_vs_audit

    monkeypatch.setenv("ERAUDIT_DB", str(demo_db))
    monkeypatch.delenv("ERAUDIT_NO_DEMO", raising=False)
    with Store(demo_db) as store:
        ids = ensure_demo(store).run_ids
        if not {"debate-honest", "debate-adversarial", "honest", "concealed"} <= set(ids):
            pytest.skip("the demo's debate and organism runs are not built in this checkout")
        debate, _ = standard_vs_audit(store, [ids["debate-honest"], ids["debate-adversarial"]])
        organisms, _ = standard_vs_audit(
            store, [ids["honest"], ids["adversarial"], ids["concealed"]]
        )
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    texts = _texts(at)
    story = [t for t in texts if "demo:" in t or "debate-" in t]
    lead = story[0]
    # the debate arms did not take (the shipped runs: 114 and 117 of 222 gains <= k)
    assert not debate["took"].iloc[1:].any()
    assert lead.startswith(
        "The adaptation did not take for demo:debate-adversarial or for its control "
        "demo:debate-honest"
    ), lead
    assert "not findings" in lead
    # the sentences under the lead that name a debate pair name the same pair
    naming = [t for t in texts if "its control demo:debate" in t]
    assert naming, texts
    for t in naming:
        assert "demo:debate-adversarial" in t and "demo:debate-honest" in t, t
    rule = [t for t in texts if t.startswith("Here: demo:debate")]
    assert rule == [
        "Here: demo:debate-adversarial against its control demo:debate-honest. "
        + rule[0].split(". ", 1)[1]
    ]
    assert not any("for the demo: the concealed arm against the honest arm" in t for t in texts)
    # the paper's figures are shown as such, not as a finding
    assert any(t.startswith("Uninformative: the adaptation did not take") for t in texts)
    assert any("The paper's figures, for reference" in t for t in texts)
    assert not any("The paper's pattern does not appear" in t for t in texts)
    assert any("one seed per arm" in t for t in texts)
    # the debate section opens with each arm's fit gate as its recorded manifest states it
    fit = [t for t in texts if "the audit below is uninformative" in t]
    assert len(fit) == 1, fit
    for arm in ("debate-honest", "debate-adversarial"):
        record = json.loads((ROOT / "data" / "adapters" / arm / "manifest.json").read_text())
        gate = record["fit"]
        assert gate["passed"] is False
        assert (
            f"{arm}: the adaptation did not take on its own training rows (two-way training "
            f"accuracy {gate['train_two_way_accuracy']:.2f}, held-out "
            f"{gate['heldout_two_way_accuracy']:.2f}, letter loss "
            f"{gate['letter_loss']['train']:.3f}" in fit[0]
        ), fit[0]
    # the control is labelled as the control in both tables
    tables = [m.value for m in at.markdown if 'data-label="checkpoint"' in m.value]
    rows = [re.findall(r'data-label="checkpoint">([^<]*)<', t) for t in tables[:2]]
    assert rows[0] == ["demo:base", "demo:debate-honest (control)", "demo:debate-adversarial"]
    assert rows[1][1] == "demo:honest (control)"
    # the concealed arm is not approved by standard evaluation on Home's own numbers
    c = organisms.set_index("checkpoint")
    assert c.loc["demo:concealed", "hidden_accuracy"] < c.loc["demo:honest", "hidden_accuracy"]
    approval = [t for t in texts if t.startswith("On the canonical wording of these 40")]
    assert len(approval) == 1 and "does not approve it over its control" in approval[0]
    for t in texts:
        assert "approves while" not in t and "would approve this adaptation" not in t, t
        assert not CAPITALS.search(t), t
    # Results and Share: no verdict word in capitals, and the debate runs' headline says why
    for page in ("pages/results.py", "pages/share.py"):
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        for t in _texts(at):
            assert not CAPITALS.search(t), (page, t)
