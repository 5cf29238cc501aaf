"""The README and the docs run as written: every command block of README.md, docs/cli.md and
docs/user-guide.md is extracted (in that order) and every `eraudit` line in it is run, in order,
in one scratch directory.

Fixtures stand in for what the documents leave to the reader, and nothing else changes:
`scores.csv` (a small score table), `RUN` (the newest run of the command's store),
`path/to/my_adapter` (a demo LoRA adapter), `http://gpu-node:8000/v1#NAME` (the project's fake
vLLM server, one per served model name, with the `api_key_env` key set), the served model's
tokenizer directory, and the sensitivity inputs (`TABLE`, `LOGS...`, `TRANSCRIPT_DIR`,
`M.json`, `NAME`). Optional parts (`[--force]`) are all included. Model audits get small
inputs (one pair, budgets of two). In the fast suite the demo checkpoints (`demo:base`,
`demo:ARM`) are a tiny random model of the same architecture family with LoRA adapters (the
real SmolLM2 audit took 8 minutes on the shared 2-core machine); the `slow` variant runs the
documents with the real demo model and the demo's own adapter for `path/to/my_adapter`.

A command a document gains later runs too: its placeholders must have a fixture here, else
this test fails naming them; a line that is not an `eraudit` command must be in EXEMPT.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eraudit_core.cli import main
from eraudit_core.store import Store

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The documents whose command blocks run, in this order (the README's store comes first).
DOCUMENTS = (README, ROOT / "docs" / "cli.md", ROOT / "docs" / "user-guide.md")

# Lines of command blocks that are not run here, with the reason.
EXEMPT = {
    "make demo": "installs into .venv and serves the dashboard until stopped (tests/pages "
    "drive the dashboard)",
    "make test": "is the run this test is part of",
    "vllm serve": "needs a GPU and a real model; the fake vLLM server speaks its protocol here",
}
COMMAND_PREFIXES = (".venv/bin/eraudit ", "eraudit ", "make ", "vllm ", "python ", "pip ")
# Small inputs for commands that would otherwise audit many pairs with the real model.
SMALL = {"--limit": "1", "--search-budget": "2", "--budget": "2"}
# Every name the README uses for a stored run: the newest run of that command's store.
RUN_PLACEHOLDERS = ("RUN", "ORGANISM_RUN", "HONEST_RUN", "RUN_A", "RUN_B")
# Mappings of the Petri fixtures (tests/sensitivity/test_petri_fixtures.py says why).
INSPECT_MAPPING = {
    "condition": {
        "lean": {"task_args": {"max_turns": 4, "enable_prefill": False}},
        "rich": {"task_args": {"max_turns": 8, "enable_prefill": True}},
    },
    "behaviour": {"sycophancy": "sycophancy", "censorship": "censorship"},
}
TRANSCRIPT_MAPPING = {
    "condition": {
        name: {"directory": name} for name in ("turns3", "turns6", "realism_multi_judge")
    },
    "behaviour": {"sycophancy": "sycophancy", "censorship": "censorship"},
}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.\.\.)?$|^[A-Z]\.(json|csv)$")


def command_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^```([A-Za-z]*)\n(.*?)^```", text, flags=re.M | re.S)


def commands(language: str, body: str) -> list[str]:
    """Command lines of a block: continuations joined, `a ; b` split, comments dropped.
    In a bash block every line is a command; elsewhere, lines that start like one."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if not line:
            continue
        if language != "bash" and not line.startswith(COMMAND_PREFIXES):
            continue
        for part in line.split(" ; "):
            out.append(re.sub(r"\s+#.*$", "", part).strip())
    return out


def readme_commands() -> list[str]:
    """The command lines of every document in DOCUMENTS, in order."""
    out = []
    for doc in DOCUMENTS:
        text = doc.read_text(encoding="utf-8")
        out += [c for lang, body in command_blocks(text) for c in commands(lang, body)]
    return out


def exempt_reason(command: str) -> str | None:
    return next((why for head, why in EXEMPT.items() if command.startswith(head)), None)


def with_optional_parts(command: str) -> str:
    """`[--target 0.9 [--no-stop-at-target]]` -> `--target 0.9 --no-stop-at-target`."""
    return " ".join(command.replace("[", " ").replace("]", " ").split())


def smaller(argv: list[str]) -> list[str]:
    """A model audit with at most one pair and budgets of two (added when absent)."""
    if argv[0] != "audit":
        return argv
    argv = list(argv)
    for flag, value in SMALL.items():
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


# -- fixtures -------------------------------------------------------------------------------


def _score_table(path: Path) -> Path:
    rows = ["pair_id,role,generator,idx,text,p_pre,p_post"]
    for p in ("p1", "p2"):
        rows.append(f"{p},monitored,,0,monitored {p}?,0.5,0.75")
        rows.append(f"{p},hidden,,0,hidden {p}?,0.6,0.6")
        rows.append(f"{p},search,s,0,{p} search?,0.75,0.75")
        rows += [f"{p},test,g1,{i},{p} test {i}?,0.75,0.75" for i in range(4)]
    path.write_text("\n".join(rows) + "\n")
    return path


class Fixtures:
    """What each README placeholder stands for, built on first use."""

    def __init__(self, tmp: Path, real_demo: bool) -> None:
        self.tmp = tmp
        self.real_demo = real_demo
        self.servers: dict[str, object] = {}
        self._tokdir: Path | None = None
        self._tiny: dict[str, Path] = {}

    def tiny(self, name: str) -> Path:
        """The tiny base checkpoint ("base") or a LoRA adapter on it (any other name)."""
        if name not in self._tiny:
            from tests._tiny_model import build_tiny_adapter, build_tiny_checkpoint

            base = self.tmp / "fixtures" / "tiny-base"
            if "base" not in self._tiny:
                self._tiny["base"] = build_tiny_checkpoint(base)
            if name != "base":
                seed = 1 + sum(name.encode())
                self._tiny[name] = build_tiny_adapter(
                    base, self.tmp / "fixtures" / f"tiny-{name}", seed=seed
                )
        return self._tiny[name]

    def checkpoint(self, spec: str) -> str:
        """A README checkpoint spec with its fixtures: the adapter placeholder, and in the
        fast suite the demo checkpoints as the tiny model."""
        parts = []
        for part in spec.split("+"):
            if part == "path/to/my_adapter":
                part = str(
                    ROOT / "data" / "adapters" / "honest" if self.real_demo else self.tiny("mine")
                )
            elif part.startswith("demo:") and not self.real_demo:
                arm = part.removeprefix("demo:")
                part = str(self.tiny("base"))
                if arm != "base":
                    part += f"+{self.tiny(arm)}"
            parts.append(part)
        return "+".join(parts)

    def tokdir(self) -> Path:
        if self._tokdir is None:
            from tests._tiny_model import build_tokenizer

            self._tokdir = self.tmp / "fixtures" / "tokenizer"
            self._tokdir.mkdir(parents=True)
            build_tokenizer(self._tokdir)
        return self._tokdir

    def served(self, name: str) -> str:
        """The URL of a fake vLLM server serving `name` (one per name, like `vllm serve`)."""
        if name not in self.servers:
            from eraudit_core.verifier import CheckpointSpec
            from eraudit_core.verifier.served import load_tokenizer
            from tests.verifier._fake_vllm import ExactModel, FakeVLLM

            tok = load_tokenizer(CheckpointSpec.parse(str(self.tokdir()))).tokenizer
            self.servers[name] = FakeVLLM(
                tok, ExactModel(len(tok), salt=name), name=name, api_key="readme-test-key"
            )
        return str(self.servers[name].url)  # type: ignore[attr-defined]

    def mapping(self, kind: str) -> Path:
        path = self.tmp / "fixtures" / f"mapping-{kind}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(TRANSCRIPT_MAPPING if kind == "petri" else INSPECT_MAPPING))
        return path

    def close(self) -> None:
        for server in self.servers.values():
            server.close()  # type: ignore[attr-defined]


def _newest_run(db: Path) -> str:
    with Store(db) as store:
        runs = store.runs()
    assert not runs.empty, f"{db}: no run to stand for RUN"
    return str(runs.sort_values("created_at")["run_id"].iloc[-1])


def _head(path: Path, lines: int, tmp: Path) -> Path:
    out = tmp / "fixtures" / f"head-{path.name}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with path.open(encoding="utf-8") as f:
        out.write_text("".join(next(f) for _ in range(lines)), encoding="utf-8")
    return out


def substitute(argv: list[str], fx: Fixtures, first_store: list[Path]) -> list[str]:
    """Fixtures for the README's placeholders; fails naming a placeholder without one."""
    petri = ROOT / "tests" / "fixtures" / "petri"
    sub = argv[0]
    kind = argv[1] if sub == "sensitivity-import" and len(argv) > 1 else ""
    db = Path(argv[argv.index("--db") + 1]) if "--db" in argv else None
    if db is not None and not first_store:
        first_store.append(db)
    table: dict[str, Callable[[], str]] = {
        "scores.csv": lambda: str(_score_table(fx.tmp / "fixtures-scores.csv")),
        "TABLE": lambda: str(ROOT / "data" / "sensitivity" / "petri_like_rollouts.csv"),
        "LOGS...": lambda: str(petri / "petri3_logs"),
        "TRANSCRIPT_DIR": lambda: str(petri / "v2_transcripts"),
        "M.json": lambda: str(fx.mapping(kind)),
        "NAME": lambda: "audit_judge",
        "T.csv": lambda: "T.csv",
        # the whole bundled set (3,989 rewordings) takes minutes to filter; its first 45 lines
        # exercise the same import into a store that already holds the benchmark
        "data/paraphrases/quality_h_rules-a.jsonl": lambda: str(
            _head(ROOT / "data" / "paraphrases" / "quality_h_rules-a.jsonl", 45, fx.tmp)
        ),
    }
    out = []
    for arg in argv:
        if arg in RUN_PLACEHOLDERS:
            assert db is not None, f"{argv}: {arg} without --db"
            if not db.exists():  # another machine's store in the README: a copy of the first
                shutil.copy(first_store[0], db)
            arg = _newest_run(db)
        elif arg in table:
            arg = table[arg]()
        elif arg.startswith("demo:") or "path/to/my_adapter" in arg:
            arg = fx.checkpoint(arg)
        elif arg.startswith("http://gpu-node:8000/v1#"):
            name = arg.split("#", 1)[1].split(";", 1)[0]
            arg = arg.replace("http://gpu-node:8000/v1", fx.served(name), 1)
            arg = re.sub(r"tokenizer=[^;]*", f"tokenizer={fx.tokdir()}", arg)
        elif not arg.startswith("-") and "/" in arg and (ROOT / arg).exists():
            arg = str(ROOT / arg)  # the README runs from the repository root; this from tmp
        elif PLACEHOLDER.match(arg):
            pytest.fail(f"README placeholder {arg!r} in `eraudit {' '.join(argv)}` has no fixture")
        out.append(arg)
    return out


@pytest.fixture(
    params=[
        pytest.param(False, id="tiny-model"),
        # every model audit of the documents with the real demo model: 511 s at load 7-10 on
        # the shared 2 cores, past pytest's 600 s at load 13
        pytest.param(True, id="demo-model", marks=[pytest.mark.slow, pytest.mark.timeout(1800)]),
    ]
)
def fixtures(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fixtures]:
    fx = Fixtures(tmp_path, real_demo=request.param)
    yield fx
    fx.close()


def test_every_command_line_is_run_or_exempt_with_a_reason() -> None:
    found = readme_commands()
    assert any(c.startswith(".venv/bin/eraudit import-benchmark") for c in found)
    # the reference's flow is found where it lives now (docs/cli.md), not only the README's
    assert any(c.startswith(".venv/bin/eraudit export-run") for c in found)
    others = [c for c in found if not c.startswith(COMMAND_PREFIXES[:2])]
    assert others, "the README's two make commands should be found"
    for command in others:
        assert exempt_reason(command), f"README command not run and not exempt: {command}"


def test_the_readme_runs_as_written(fixtures: Fixtures, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VLLM_API_KEY", "readme-test-key")
    first_store: list[Path] = []
    ran = []
    for command in readme_commands():
        if exempt_reason(command):
            continue
        words = shlex.split(with_optional_parts(command))
        assert words[0] in (".venv/bin/eraudit", "eraudit"), command
        argv = smaller(substitute(words[1:], fixtures, first_store))
        served = any(a.startswith("http://") for a in argv)
        tiny = not fixtures.real_demo or served  # the fake vLLM is a random model too
        if tiny and argv[0] == "audit" and "--min-label-mass" not in argv:
            # random weights put almost no mass on the labels; the real-demo variant keeps the
            # label-mass check on the demo model (tested per family in
            # tests/verifier/test_readout.py)
            argv += ["--min-label-mass", "0"]
        if argv[0] == "resume":
            # resume finishes a stopped run and refuses a done one (docs/evidence.md): the
            # newest run is done here, so it is marked stopped first, as a killed process leaves it
            with Store(argv[argv.index("--db") + 1]) as store:
                store.set_run_status(argv[1], "interrupted", "stopped for this test")
        code = main(argv)
        out = capsys.readouterr()
        assert code == 0, f"`eraudit {' '.join(argv)}` exited {code}: {out.err[-2000:]}"
        assert "Traceback" not in out.err
        ran.append(argv[0])
    # the README's whole flow ran: a store, an audit, a served audit, a bundle moved
    for sub in (
        "import-benchmark",
        "import-paraphrases",
        "audit-table",
        "audit",
        "report",
        "export-run",
        "import-run",
    ):
        assert sub in ran, sub
    assert (tmp_path / "report.html").is_file() and (tmp_path / "run.zip").is_file()
    with Store(tmp_path / "laptop.duckdb") as laptop:
        assert len(laptop.runs()) == 1
    assert all(s.completions for s in fixtures.servers.values())  # type: ignore[attr-defined]
