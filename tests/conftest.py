"""Shared test setup: keep every test offline.

Only environment settings live here; fixtures belong in the test files that use them or in
tests/_*.py helper modules, so engineers working in parallel do not clash.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
