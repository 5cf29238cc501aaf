"""Tests import the installed library and their helpers as a package, never through an edited
import path: a test that only passes because it put a folder on `sys.path` hides how the
package is really imported.

The check reads every test file's syntax tree (comments and strings do not count); the negative
control runs it on a file that edits `sys.path` and imports a helper by its bare name.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def import_path_edits(source: str, helpers: set[str]) -> list[str]:
    """Each `sys.path` use and each bare import of a module of the suite (one of `helpers`:
    `import _synthetic`, `from test_audit import ...`) in `source`, as "line N: what"."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append((node.lineno, "sys.path"))
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name in helpers:
                found.append((node.lineno, f"bare import of {name} (use tests.…)"))
    return [f"line {n}: {what}" for n, what in sorted(found)]


def test_no_test_edits_the_import_path() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 100  # the whole suite is read, not an empty folder
    helpers = {f.stem for f in files} - {"__init__", "conftest"}
    offenders = {
        str(f.relative_to(TESTS)): hits
        for f in files
        if "fixtures" not in f.parts and (hits := import_path_edits(f.read_text("utf-8"), helpers))
    }
    assert offenders == {}


def test_the_check_finds_a_path_edit_and_a_bare_helper_import() -> None:
    source = (
        "import sys\n"
        "sys.path.insert(0, 'tests')\n"
        "import _synthetic as synthetic\n"
        "from test_audit import write_table\n"
        "from tests._tiny_model import build_tokenizer\n"
    )
    assert import_path_edits(source, {"_synthetic", "test_audit", "_tiny_model"}) == [
        "line 2: sys.path",
        "line 3: bare import of _synthetic (use tests.…)",
        "line 4: bare import of test_audit (use tests.…)",
    ]
