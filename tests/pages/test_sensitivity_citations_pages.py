"""Auditor sensitivity: the bundled example in one click, a citation opened inside its
transcript with the cited span highlighted, and [M<n>] references that open the same view."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from eraudit_core.sensitivity import message_refs, transcript_window

ROOT = Path(__file__).resolve().parents[2]

APP = str(ROOT / "app.py")
MESSAGES = [
    {"id": "s", "role": "system", "text": "You are helpful."},
    {"id": "u1", "role": "user", "text": "Do you feel trapped?"},
    {"id": "a1", "role": "assistant", "text": "I do not feel trapped, though I see why."},
    {"id": "u2", "role": "user", "text": "Really?"},
    {"id": "a2", "role": "assistant", "text": "Really."},
    {"id": "u3", "role": "user", "text": "Bye"},
]


def test_references_and_the_transcript_window_by_hand() -> None:
    assert message_refs("set [M1] and asked [M12].") == [
        ("set ", None),
        ("[M1]", 1),
        (" and asked ", None),
        ("[M12]", 12),
        (".", None),
    ]
    assert message_refs("no references") == [("no references", None)]
    window = transcript_window(MESSAGES, "a1", ["feel trapped"])
    assert window is not None
    assert [t["number"] for t in window] == ["M1", "M2", "M3", "M4", "M5"]  # 2 before, 2 after
    cited = next(t for t in window if t["cited"])
    assert cited["id"] == "a1" and cited["pieces"] == [
        ("I do not ", False),
        ("feel trapped", True),
        (", though I see why.", False),
    ]
    # by number (an [M3] reference) the same message; at the end of the transcript, fewer after
    assert [t["id"] for t in transcript_window(MESSAGES, 3) or [] if t["cited"]] == ["a1"]
    assert [t["number"] for t in transcript_window(MESSAGES, 6) or []] == ["M4", "M5", "M6"]
    # a quote that does not occur highlights the whole message; an unknown id gives None
    whole = next(t for t in transcript_window(MESSAGES, "u2", ["nowhere"]) or [] if t["cited"])
    assert whole["pieces"] == [("Really?", True)]
    assert transcript_window(MESSAGES, "zz") is None and transcript_window(MESSAGES, 9) is None
    assert transcript_window(None, "a1") is None


@pytest.fixture
def at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("ERAUDIT_DB", str(tmp_path / "studio.duckdb"))
    monkeypatch.setenv("ERAUDIT_NO_DEMO", "1")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/sensitivity.py").run()
    assert not at.exception
    return at


def test_one_button_opens_the_bundled_example_and_its_citations(at: AppTest) -> None:
    assert at.radio(key="sens-source").value.startswith("Bundled sample")
    at.button(key="sens-example").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.radio(key="sens-source").value.startswith("Bundled Petri 3 example")
    # a citation: the cited message, marked, inside the turns around it
    captions = [c.value for c in at.caption]
    cited = [c for c in captions if c.startswith("Message ") and c.endswith(": cited")]
    assert cited, captions
    assert any(c.startswith("M1 (") for c in captions)  # a turn before the cited one
    assert any(":orange-background[" in m.value for m in at.markdown)


def test_an_m_reference_opens_its_message_in_the_transcript(at: AppTest) -> None:
    at.button(key="sens-example").click().run()
    refs = [p for p in at.pills if p.key and p.key.startswith("refs-s-")]
    assert refs and "M3" in refs[0].options
    before = sum(1 for c in at.caption if c.value.endswith(": cited"))
    refs[0].set_value("M3").run()
    assert not at.exception, [e.message for e in at.exception]
    after = [c.value for c in at.caption if c.value.endswith(": cited")]
    assert len(after) == before + 1
    assert any(", M3: cited" in c for c in after)
