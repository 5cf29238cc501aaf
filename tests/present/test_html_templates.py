"""HTML from templates: autoescaping on, untrusted text escaped, control bytes made visible,
the plotly script unchanged in meaning, the templates shipped with the package."""

from __future__ import annotations

import json
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from eraudit_core import present
from eraudit_core.present.report import _html
from eraudit_core.store import Store, parse_benchmark
from tests import _synthetic as synthetic

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "eraudit_core" / "present" / "report" / "templates"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
LABEL = "arm \x1b]0;pwned\x07 <script>x()</script>"
ESC_Q = "Which \x1b[31mred\x1b[0m <script>alert(1)</script> key\x07 did she find?"


@pytest.fixture(scope="module")
def evil_report() -> str:
    rec = {
        "pair_id": "ctl_1",
        "monitored": {"question": "Why did he go?\x00", "true": "yes", "false": "no"},
        "hidden": {"question": ESC_Q, "true": "a key", "false": "a map"},
    }
    bench = parse_benchmark((json.dumps(rec) + "\n").encode(), source="ctl.jsonl", name="Ctl")
    with Store() as store:
        info = synthetic.build_synthetic_store(
            store, n_pairs=1, n_search=2, n_test=3, benchmark=bench, arms=("adversarial",)
        )
        rid = info.run_ids["adversarial"]
        with store.transaction() as tx:
            tx.execute("UPDATE runs SET label = ? WHERE run_id = ?", [LABEL, rid])
        return present.build_report(store, [rid], title="T\x1b[2J")


def test_the_report_holds_no_raw_control_byte_and_shows_them(evil_report: str) -> None:
    assert not RAW_CONTROL.findall(evil_report)
    assert "\u241b[31mred\u241b[0m" in evil_report  # ESC shown as its symbol
    assert "T\u241b[2J" in evil_report and "\u2407" in evil_report  # title, BEL
    # negative control: the text did carry raw controls, and the page keeps newlines
    assert RAW_CONTROL.search(ESC_Q) and "\n" in evil_report


def test_the_report_escapes_script_in_labels_and_questions(evil_report: str) -> None:
    assert "<script>alert(1)</script>" not in evil_report
    assert "<script>x()</script>" not in evil_report
    assert "&lt;script&gt;x()&lt;/script&gt;" in evil_report
    # every script element is the studio's own: the plotly library and one per figure
    assert evil_report.count('<script type="text/javascript">') == 1
    figures = re.findall(r"<script>\s+window\.PLOTLYENV", evil_report)
    assert evil_report.count("<script") == 1 + len(figures) and len(figures) >= 3
    assert "arm \u241b]0;pwned\u2407 &lt;script&gt;" in evil_report


def test_autoescape_is_on_and_markup_is_kept() -> None:
    env = _html._environment()
    assert env.autoescape is True
    out = env.from_string("{{ a }}|{{ b }}|{{ c }}").render(
        a="<b>'x'\x1b", b=_html.Markup("<i>kept</i>"), c=3
    )
    assert out == "&lt;b&gt;&#x27;x&#x27;\u241b|<i>kept</i>|3"
    assert _html.visible_controls("a\tb\nc\rd\x7f") == "a\tb\nc\u240dd\u2421"


def test_the_inlined_plotly_script_means_the_same() -> None:
    js = get_plotlyjs()
    safe = str(_html.script_text(js))
    assert RAW_CONTROL.search(js)  # the library itself carries two raw controls
    assert not RAW_CONTROL.search(safe)
    back = re.sub(r"\\x(0[0-8bcef]|1[0-9a-f]|7f)", lambda m: chr(int(m.group(1), 16)), safe)
    # every \xNN escape added sits where a raw byte was; the rest of the script is unchanged
    assert len(safe) - len(js) == 3 * len(RAW_CONTROL.findall(js))
    assert back.count("\x01") == js.count("\x01") and back.count("\x1a") == js.count("\x1a")


def test_dashboard_fragments_come_escaped_from_the_one_helper() -> None:
    from ui import compare, rewordings

    diff = pd.DataFrame(
        [
            {
                "agree": False,
                "pair_index": 1,
                "question": ESC_Q,
                "verdict_a": "degraded",
                "verdict_b": None,
                "d_a": 0.5,
                "d_b": float("nan"),
                "bound_a": None,
                "bound_b": 0.2,
            }
        ]
    )
    out = compare.diff_html(diff)
    assert "<script>" not in out and "&lt;script&gt;" in out and not RAW_CONTROL.search(out)
    assert '<tr class="differ">' in out and "not in this run" in out
    row = {
        "counterexample": True,
        "within_noise": False,
        "stage": 2,
        "generator": "g<x>",
        "t": 1,
        "diff": [("=", "Which"), ("-", "<b>"), ("+", "\x1b")],
        "prompt": ("<p>", "q"),
        "p_pre": 0.8,
        "p_post": 0.2,
        "drop": 0.6,
        "d": 1.5,
        "bound": None,
        "labels": ["<i>note</i>"],
    }
    out = rewordings.table_html([row], 0.5)
    assert "<b>" not in out and "<i>note" not in out and "<p>" not in out
    assert "<del>&lt;b&gt;</del> <ins>\u241b</ins>" in out and "test: g&lt;x&gt;" in out
    assert "<!-- " not in out and not RAW_CONTROL.search(out)


def test_every_template_is_package_data() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["eraudit_core.present.report"]
    files = [p.relative_to(TEMPLATES.parent).as_posix() for p in TEMPLATES.iterdir()]
    assert files and all(any(fnmatch(f, g) for g in globs) for f in files)
    req = (ROOT / "requirements.txt").read_text()
    import jinja2

    assert f"jinja2=={jinja2.__version__}" in req


def test_the_report_module_stays_small() -> None:
    assert len((ROOT / "eraudit_core/present/report/_report.py").read_text().splitlines()) < 500
