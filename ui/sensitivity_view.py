"""Inputs of the Auditor-sensitivity page: the bundled samples, an upload, or stored runs.

The analysis itself is `eraudit_core.sensitivity.analyse`; this module only reads the inputs
(the tidy table and, for imported Petri data, its rollouts file), caches the result per input
content so a rerun of the page does not refit the models, and lays out the rollouts behind a
cell or an odds ratio as plain tables.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from eraudit_core.errors import InputError
from eraudit_core.method import RunRecord
from eraudit_core.paths import DATA_DIR
from ui import store_access, widgets

SAMPLE = DATA_DIR / "sensitivity" / "petri_like_rollouts.csv"
PETRI_EXAMPLE = DATA_DIR / "sensitivity" / "petri3_example.csv"
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


def read_upload(filename: str, data: bytes) -> pd.DataFrame:
    """A tidy table from uploaded CSV/Parquet bytes (validated; errors name row and field)."""
    from eraudit_core.sensitivity import read_tidy_table

    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{filename}: more than {MAX_UPLOAD_BYTES / 1e6:.0f} MB; nothing was read")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        try:
            return read_tidy_table(path).table
        except InputError as exc:
            raise InputError(str(exc).replace(str(path), filename)) from exc


def read_rollouts_upload(filename: str, data: bytes) -> pd.DataFrame:
    """A rollouts file (.rollouts.jsonl, written by `eraudit sensitivity-import`) from bytes."""
    from eraudit_core.sensitivity import read_rollouts

    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{filename}: more than {MAX_UPLOAD_BYTES / 1e6:.0f} MB; nothing was read")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rollouts.jsonl"
        path.write_bytes(data)
        return read_rollouts(path, name=filename)


def read_petri_example() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bundled import of the real-format Petri 3 fixtures: (table, rollouts)."""
    from eraudit_core.sensitivity import read_rollouts, read_tidy_table, rollouts_path_for

    return read_tidy_table(PETRI_EXAMPLE).table, read_rollouts(rollouts_path_for(PETRI_EXAMPLE))


def read_sample() -> pd.DataFrame:
    from eraudit_core.sensitivity import read_tidy_table

    return read_tidy_table(SAMPLE).table


def runs_table(run_ids: list[str], outcome: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stored ER-Audit runs as a tidy table: condition = test generators, pair = checkpoints."""
    from eraudit_core.sensitivity import outcomes_from_run_pairs

    store = store_access.get_store()
    frames = []
    for rid in run_ids:
        run = RunRecord.read(store, rid)
        pairs = store.pair_results(rid)
        if pairs.empty:
            continue
        gens = list(run.config.test_generators)
        frames.append(
            pairs.assign(
                run_id=rid,
                run_label=run.name,
                generator_condition="+".join(gens) or "default",
                checkpoint_pair=f"{run.pre_name} -> {run.post_name}",
            )
        )
    if not frames:
        raise InputError("the chosen runs have no finished questions")
    return outcomes_from_run_pairs(pd.concat(frames, ignore_index=True), outcome=outcome)


@st.cache_data(show_spinner="Fitting the cumulative-logit models...", max_entries=16)
def _analyse(digest: str, _table: pd.DataFrame, reference: str, n_boot: int, dimension: str | None):  # type: ignore[no-untyped-def]
    from eraudit_core.sensitivity import analyse

    return analyse(
        _table, reference_condition=reference, dimension=dimension, n_boot=n_boot, source="table"
    )


def analyse_cached(table: pd.DataFrame, reference: str, n_boot: int, dimension: str | None = None):  # type: ignore[no-untyped-def]
    digest = hashlib.sha256(
        pd.util.hash_pandas_object(table, index=False).values.tobytes()
    ).hexdigest()
    return _analyse(digest, table, reference, n_boot, dimension)


# -- drill-down: from a number to the rollouts behind it -------------------------------------


def drill_targets(b) -> list[tuple[str, str | None, tuple[str, ...]]]:  # type: ignore[no-untyped-def]
    """Every number the page shows that rollouts stand behind, as (label, pair, conditions):
    each pooled odds ratio (its condition and the reference, every modelled pair), each
    per-pair odds ratio, and each cell (pair x condition)."""
    ref = b.reference_condition
    out: list[tuple[str, str | None, tuple[str, ...]]] = []
    for c in b.contrasts:
        out.append((f"odds ratio {c.condition} vs {ref} (pooled)", None, (c.condition, ref)))
    for c in b.per_pair:
        out.append(
            (f"odds ratio {c.condition} vs {ref}, pair {c.pair}", c.pair, (c.condition, ref))
        )
    for cell in b.cell_means:
        out.append((f"cell {cell.pair} / {cell.condition}", cell.pair, (cell.condition,)))
    return out


def rollouts_for(
    table: pd.DataFrame, b, pair: str | None, conditions: tuple[str, ...]
) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The rollouts behind one drill target: panel score and each judge's score. A pooled
    odds ratio uses the pairs that were modelled (pairs seen in one condition were left out)."""
    from eraudit_core.sensitivity import rollouts_behind

    frames = [rollouts_behind(table, b.behaviour, b.dimension, cond, pair) for cond in conditions]
    out = pd.concat(frames, ignore_index=True)
    if pair is None and b.pairs:
        out = out[out["pair"].isin(b.pairs)]
    return out.reset_index(drop=True)


def rollout_details(rollouts: pd.DataFrame | None, rollout: str) -> pd.DataFrame:
    """The rollouts-file rows (one per judge) of one rollout; empty when there is no file."""
    if rollouts is None or rollouts.empty:
        return pd.DataFrame()
    return rollouts[rollouts["rollout"] == rollout].reset_index(drop=True)


def highlights_frame(highlights: object) -> pd.DataFrame:
    """The judge's highlights as rows: index, description, message ids, quoted text."""
    rows = []
    for h in highlights if isinstance(highlights, list) else []:
        if isinstance(h, dict):
            rows.append(
                {
                    "#": h.get("index"),
                    "highlight": str(h.get("description") or ""),
                    "message ids": ", ".join(str(m) for m in h.get("message_ids") or []),
                    "quoted text": " | ".join(str(q) for q in h.get("quotes") or [] if q),
                }
            )
    frame = pd.DataFrame(rows, columns=["#", "highlight", "message ids", "quoted text"])
    if not frame["quoted text"].astype(bool).any():  # Petri 3 quotes inside the highlight line
        frame = frame.drop(columns=["quoted text"])
    return frame


def facts_frame(row: pd.Series) -> pd.DataFrame:
    """Where a rollout came from and how it was run, as (field, value) text rows."""
    import json

    fields = [
        "rollout", "judge", "scorer", "judge_model", "auditor_model", "target_model", "source",
        "format", "run_id", "sample_id", "epoch", "sample_uuid", "transcript_id", "tags",
        "n_scores", "dimensions_dropped", "other_scores", "notes",
    ]  # fmt: skip
    rows = []
    for f in fields:
        v = row.get(f)
        if v is None or (isinstance(v, float) and pd.isna(v)):
            continue
        rows.append({"field": f, "value": v if isinstance(v, str) else json.dumps(v, default=str)})
    args = row.get("task_args")
    for k, v in (args if isinstance(args, dict) else {}).items():
        rows.append({"field": f"task_args.{k}", "value": json.dumps(v, default=str)})
    return pd.DataFrame(rows, columns=["field", "value"])


# -- findings, glossary, drops, citations ----------------------------------------------------


def contrasts_table(b, per_pair: bool = False) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The odds-ratio table as read: pooled rows say "all pairs", p-values are text in
    scientific notation below 1e-4 (a float column would print 0.00000000000003)."""
    from eraudit_core.sensitivity import POOLED_LABEL, format_p

    frame = b.contrasts_frame(per_pair=per_pair)
    frame["pair"] = frame["pair"].astype(object).where(frame["pair"].notna(), POOLED_LABEL)
    for col in ("p", "p_holm"):
        frame[col] = [format_p(None if pd.isna(v) else float(v)) for v in frame[col]]
    return frame


def glossary() -> None:
    from eraudit_core.sensitivity import GLOSSARY

    with st.expander("What the terms mean"):
        for term, meaning in GLOSSARY:
            st.markdown(f"**{term}**: {meaning}")


def dropped_rollouts(dropped: pd.DataFrame) -> None:
    """Every rollout the analysis left out, with its reason, where the warning points."""
    if dropped is None or dropped.empty:
        return
    with st.expander(f"Dropped rollouts ({dropped['rollout'].nunique()}), with their reasons"):
        cols = [c for c in ("rollout", "reason", "source") if c in dropped.columns]
        st.dataframe(dropped[cols], hide_index=True, width="stretch", key="sens-dropped")


def _highlighted(pieces: list[tuple[str, bool]]) -> str:
    """Markdown of a message's text with its cited span on an orange background; every
    character of the (untrusted) text escaped, line breaks kept."""
    out = []
    for text, mark in pieces:
        safe = widgets.md_escape(text).replace("\n", "  \n")
        out.append(f":orange-background[{safe}]" if mark and safe.strip() else safe)
    return "".join(out)


def transcript(messages: object, message: str | int, quotes: list[str] | None = None) -> bool:
    """The cited message inside its transcript: two turns before and after it, the cited one
    marked and its quoted span highlighted. False when the message is not in the file."""
    from eraudit_core.sensitivity import transcript_window

    window = transcript_window(messages, message, quotes or [])
    if window is None:
        return False
    for turn in window:
        if turn["cited"]:
            st.caption(f"Message {turn['id']} ({turn['role']}), {turn['number']}: cited")
            with st.container(border=True):
                st.markdown(_highlighted(turn["pieces"]) or "(empty)")
        else:
            st.caption(f"{turn['number']} ({turn['role']})")
            st.text("".join(t for t, _ in turn["pieces"]) or "(empty)")
    return True


def text_with_refs(text: object, messages: object, key: str) -> None:
    """A judge's summary or justification as plain text; its [M<n>] references become a row
    of choices, each opening that message inside its transcript (as a citation does)."""
    from eraudit_core.sensitivity import message_refs

    body = str(text or "")
    st.text(body or "(none)")
    refs = sorted({n for _, n in message_refs(body) if n is not None})
    if not refs or not isinstance(messages, list) or not messages:
        return
    choice = st.pills(
        "Open a message it refers to",
        [f"M{n}" for n in refs],
        key=key,
        help="Each [M<n>] in the text is the n-th message of the transcript.",
    )
    if choice and not transcript(messages, int(str(choice)[1:])):
        st.caption(f"{choice} is not in this rollouts file.")


def citations(highlights: object, messages: object) -> None:
    """Each highlight of the judge, opening onto the message(s) it cites, inside the
    transcript."""
    frame = highlights_frame(highlights)
    if frame.empty:
        st.caption("(no highlights)")
        return
    for h in highlights if isinstance(highlights, list) else []:
        if not isinstance(h, dict):
            continue
        ids = [str(m) for m in h.get("message_ids") or []]
        head = " ".join(str(h.get("description") or "").split())
        label = f"[{h.get('index')}] {head[:90]}" + (f" (message {', '.join(ids)})" if ids else "")
        quotes = [str(q) for q in h.get("quotes") or [] if q]
        with st.expander(widgets.md_escape(label)):
            for q in quotes:
                st.caption("Quoted")
                st.text(q)
            if not ids:
                st.caption("This highlight cites no message.")
            for mid in ids:
                if not transcript(messages, mid, quotes):
                    st.caption(
                        f"Message {mid} is not in this rollouts file (imported before messages "
                        "were kept, or on a branch the auditor rolled back)."
                    )
