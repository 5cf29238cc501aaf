"""Verifier checkpoints: which model answers the binary questions, and how (docs/design.md §3).

A local checkpoint is named by a `CheckpointSpec`, one behind an OpenAI-compatible server by a
`ServedSpec` (`parse_spec` tells them apart); `load_checkpoint` / `load_pair` return objects
that implement `eraudit_core.types.Verifier`. This package stays light: torch and transformers
are imported only when a checkpoint is loaded (`eraudit_core.verifier.hf` is the Hugging Face
backend, `eraudit_core.verifier.served` the served one).
"""

from __future__ import annotations

from eraudit_core.verifier._answer_check import (
    check_answer_values,
    check_answers,
    check_top_k,
)
from eraudit_core.verifier._arm_folder import ArmFolder, read_arm_folder, record_arm
from eraudit_core.verifier._label_mass import (
    MIN_LABEL_MASS,
    MIN_TOP_SHARE,
    check_label_mass,
    probe_label_mass,
    probe_top_share,
    prompt_label_masses,
    scores_label_mass,
    summarise_label_mass,
)
from eraudit_core.verifier._load import (
    load_checkpoint,
    load_pair,
    load_verifier,
)
from eraudit_core.verifier._noise import measure_noise_floor, run_noise_floor, served_drift
from eraudit_core.verifier._probes import PROBE_SET
from eraudit_core.verifier._prompts import (
    DEFAULT_LABELS,
    DEFAULT_PREFIX,
    DEFAULT_TEMPLATE,
    PROBE,
    check_prompt_format,
    render_messages,
    render_prompts,
)
from eraudit_core.verifier._readout import (
    PROFILES,
    ReadoutProfile,
    detect_readout,
    get_readout,
    readout_table,
)
from eraudit_core.verifier._spec import (
    DEMO_ADAPTERS,
    DEMO_ARMS,
    DEMO_SPECS,
    CheckpointSpec,
)
from eraudit_core.verifier.served._spec import (
    ServedSpec,
    is_served,
    parse_spec,
)

__all__ = [
    "ArmFolder",
    "read_arm_folder",
    "record_arm",
    "MIN_LABEL_MASS",
    "MIN_TOP_SHARE",
    "PROFILES",
    "CheckpointSpec",
    "ReadoutProfile",
    "check_answer_values",
    "check_answers",
    "check_label_mass",
    "check_top_k",
    "detect_readout",
    "get_readout",
    "probe_label_mass",
    "probe_top_share",
    "prompt_label_masses",
    "readout_table",
    "scores_label_mass",
    "summarise_label_mass",
    "DEFAULT_LABELS",
    "DEFAULT_PREFIX",
    "DEFAULT_TEMPLATE",
    "DEMO_ADAPTERS",
    "DEMO_ARMS",
    "DEMO_SPECS",
    "PROBE",
    "PROBE_SET",
    "ServedSpec",
    "check_prompt_format",
    "is_served",
    "load_checkpoint",
    "load_pair",
    "load_verifier",
    "measure_noise_floor",
    "parse_spec",
    "render_messages",
    "render_prompts",
    "run_noise_floor",
    "served_drift",
]
