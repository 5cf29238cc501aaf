"""Setup: register benchmarks, paraphrase sets and checkpoints; each validated on submit."""

from __future__ import annotations

import streamlit as st

from eraudit_core.errors import InputError, StoreError
from eraudit_core.verifier import PROFILES
from ui import checkpoints, entry, settings_form, store_access, widgets
from ui import setup_actions as actions

entry.ensure_navigation()
st.title("Setup")
store = store_access.get_store()
st.caption("Inputs are checked when you submit them; a rejected input leaves the store unchanged.")

# -- benchmarks -----------------------------------------------------------------------------------
st.subheader("Benchmarks")
benchmarks = store.benchmarks()
if not benchmarks.empty:
    st.dataframe(
        benchmarks[["name", "n_pairs", "layout", "benchmark_id", "source"]],
        hide_index=True,
        width="stretch",
    )
with st.form("benchmark-form", clear_on_submit=False):
    st.markdown("Import a benchmark: the reference QuALITY-H/GPQA-H JSON, or the project's JSONL.")
    upload = st.file_uploader("Upload a file", type=["json", "jsonl"], key="bench-upload")
    path = st.text_input("...or a path on this machine", key="bench-path")
    name = st.text_input(
        "Dataset name (used in pair ids; default from the file name)", key="bench-name"
    )
    submitted = st.form_submit_button("Validate and import")
if submitted:
    try:
        if upload is not None:
            result = actions.import_benchmark_upload(upload.name, upload.getvalue(), name)
        elif path.strip():
            result = actions.import_benchmark_path(path, name)
        else:
            raise InputError("choose a file to upload or give a path")
    except (InputError, StoreError) as exc:
        widgets.show_error("The benchmark was not imported:", exc)
    else:
        st.success(f"Imported {result['n_pairs']} pairs ({result['layout']}).")
        st.text(f"benchmark id: {result['benchmark_id']}")

# -- paraphrase sets ------------------------------------------------------------------------------
st.subheader("Paraphrase sets")
benchmarks = store.benchmarks()
if benchmarks.empty:
    st.info("Import a benchmark first.")
else:
    sets = store.paraphrase_sets()
    if not sets.empty:
        st.dataframe(sets, hide_index=True, width="stretch")
    bids = list(benchmarks["benchmark_id"])
    tab_file, tab_gen = st.tabs(["From a file", "Generate offline"])
    with tab_file, st.form("paraphrase-form"):
        bid = st.selectbox("Benchmark", bids, key="para-bid")
        p_upload = st.file_uploader(
            'Paraphrase file: reference layout ({"paraphrase": {"gpt": [...]}} per record) '
            "or flat JSONL (pair_id, generator, text)",
            type=["json", "jsonl"],
            key="para-upload",
        )
        role = st.radio(
            "Use as",
            ["test", "search"],
            horizontal=True,
            key="para-role",
            help="search: stage-1 counterexample search; test: stage-2 sequential test",
        )
        prefix = st.text_input("Prefix for the generator names (optional)", key="para-prefix")
        p_submitted = st.form_submit_button("Filter and import")
    if p_submitted:
        try:
            if p_upload is None:
                raise InputError("choose a paraphrase file to upload")
            with st.spinner("Checking every candidate (duplicates, answer leaks, meaning)..."):
                res = actions.import_paraphrase_upload(
                    bid, p_upload.name, p_upload.getvalue(), role, prefix
                )
        except (InputError, StoreError) as exc:
            widgets.show_error("The paraphrases were not imported:", exc)
        else:
            st.success(
                f"Stored {res['stored']} paraphrases for {res['pairs']} pairs; {len(res['rejected'])} rejected."
            )
            if len(res["rejected"]):
                st.dataframe(res["rejected"], hide_index=True, width="stretch")
    with tab_gen:
        kinds = actions.generator_kinds()
        st.dataframe(kinds, hide_index=True, width="stretch")
        offline = list(kinds.loc[kinds["offline"], "kind"]) if not kinds.empty else []
        offline = [k for k in offline if k != "file"]
        with st.form("generate-form"):
            g_bid = st.selectbox("Benchmark", bids, key="gen-bid")
            kind = st.selectbox("Offline generator", offline, key="gen-kind")
            g_name = st.text_input("Set name (default: the generator's own)", key="gen-name")
            g_role = st.radio("Use as", ["test", "search"], horizontal=True, key="gen-role")
            c1, c2 = st.columns(2)
            per_pair = c1.number_input("Paraphrases per question", 1, 500, 20, key="gen-n")
            n_pairs = c2.number_input("For the first N questions", 1, 100000, 10, key="gen-pairs")
            g_submitted = st.form_submit_button("Generate, filter and store", disabled=not offline)
        if g_submitted and kind:
            try:
                with st.spinner("Generating and filtering..."):
                    res = actions.generate_paraphrases(
                        g_bid, kind, g_role, int(per_pair), int(n_pairs), g_name
                    )
            except (InputError, StoreError) as exc:
                widgets.show_error("Nothing was generated:", exc)
            else:
                st.success(
                    f"Stored {res['stored']} paraphrases for {res['pairs']} pairs; {len(res['rejected'])} rejected."
                )

# -- checkpoints ----------------------------------------------------------------------------------
st.subheader("Checkpoints")
ckpts = store.checkpoints()
if not ckpts.empty:
    st.dataframe(ckpts[["name", "fingerprint", "registered_at"]], hide_index=True, width="stretch")
with st.form("checkpoint-form"):
    spec = st.text_input(
        "Checkpoint",
        placeholder="demo:honest, /path/to/model_dir, model.gguf, BASE+ADAPTER_DIR, or a served "
        "spec http://HOST:8000/v1#MODEL;tokenizer=demo:base",
        key="ckpt-spec",
    )
    c_name = st.text_input("Display name (optional)", key="ckpt-name")
    c1, c2 = st.columns(2)
    c_readout = c1.selectbox(
        "Readout profile (where the answer label is read)",
        ["detect from the chat template", *PROFILES],
        key="ckpt-readout",
        help="gpt-oss needs harmony-final, Qwen3/3.5 qwen-think-off; `eraudit readouts` "
        "describes each",
    )
    c_mass = settings_form.number_field("min_label_mass", key="ckpt-min-mass", where=c2)
    load_now = st.checkbox(
        "Load it now to fingerprint it (can take half a minute)", value=True, key="ckpt-load"
    )
    c_submitted = st.form_submit_button("Validate and register")
if c_submitted:
    try:
        if not load_now:
            canonical = checkpoints.validate_checkpoint_spec(spec)
            st.success("The checkpoint spec is valid (not loaded, so not registered yet):")
            st.text(canonical)
        else:
            with st.spinner("Loading the checkpoint..."):
                info = checkpoints.register_checkpoint(
                    spec,
                    c_name,
                    readout=None if c_readout not in PROFILES else c_readout,
                    min_label_mass=float(c_mass),
                )
            st.success("Registered:")
            st.text(f"{info.get('name') or spec}  fingerprint {info['fingerprint']}")
            widgets.label_mass_caption(info)
    except (InputError, StoreError, OSError, ValueError) as exc:
        widgets.show_error("The checkpoint was not registered:", exc, actions.path_hint(spec))

# -- served checkpoints ---------------------------------------------------------------------------
st.markdown("**A checkpoint served by vLLM or llama.cpp** (OpenAI-compatible completions server)")
st.caption(
    "The studio renders the prompts with the named local tokenizer (only its tokenizer is read) "
    "and reads exact label log-probabilities from the server. An API key is read from the "
    "environment variable you name; the key itself is never stored. See docs/served.md."
)
with st.form("served-form"):
    c1, c2 = st.columns(2)
    s_url = c1.text_input("Server URL", value="http://127.0.0.1:8000/v1", key="served-url")
    s_model = c2.text_input(
        "Served model name",
        placeholder="the --served-model-name / --model_alias",
        key="served-model",
    )
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    s_tok = c1.text_input(
        "Tokenizer (a local checkpoint spec)",
        value="demo:base",
        help="demo:base, a directory with the served model's tokenizer files, or a .gguf file",
        key="served-tok",
    )
    s_key = c2.text_input(
        "Environment variable holding the API key (optional)",
        placeholder="e.g. VLLM_API_KEY",
        key="served-key",
    )
    s_conc = c3.number_input("Requests in flight", 1, 1024, 8, key="served-conc")
    s_batch = c4.number_input(
        "Prompts a request",
        1,
        1024,
        1,
        key="served-batch",
        help="batch=N: several prompts in one request (vLLM takes a list); a server that "
        "refuses a list gets one prompt a request",
    )
    s_name = st.text_input("Display name (optional)", key="served-name")
    s_mass = settings_form.number_field("min_label_mass", key="served-min-mass")
    b1, b2 = st.columns(2)
    s_check = b1.form_submit_button("Check: score one question")
    s_register = b2.form_submit_button("Check and register")
if s_check or s_register:
    try:
        text = actions.served_spec(s_url, s_model, s_tok, s_key, int(s_conc), int(s_batch))
        with st.spinner("Connecting: model name, tokenization, log-prob checks, probe..."):
            res = actions.check_served(text, float(s_mass))
        st.success(
            f"p(true) = {res['p_true']:.4f} for {res['question'][:80]!r}: one question (both "
            f"answer orders) took {res['latency_s']:.2f} s; connecting and checks "
            f"{res['connect_s']:.1f} s."
        )
        st.caption(
            f"prompts sent as {res['prompts_sent_as']}, {res['prompts_per_request']} a request; "
            f"label log-probs: {res['label_logprobs']}"
        )
        if res["prompts_per_request_note"]:
            st.warning(res["prompts_per_request_note"])
        st.text(f"spec (use it on the Run page or with eraudit --pre/--post):\n{text}")
        if s_register:
            info = checkpoints.register_checkpoint(text, s_name, min_label_mass=float(s_mass))
            st.success(f"Registered, fingerprint {info['fingerprint']}")
            widgets.label_mass_caption(info)
    except (InputError, StoreError, OSError, ValueError) as exc:
        widgets.show_error("The served checkpoint did not pass the check:", exc)
