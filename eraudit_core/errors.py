"""Errors the user can act on. Messages name the file, the record and the field."""

from __future__ import annotations

from typing import Any


class ERAuditError(Exception):
    """Base of the errors this library raises on purpose."""


class InputError(ERAuditError, ValueError):
    """Bad input (a file, a record, a field, an argument). The CLI exits 2 on it."""


class StoreError(ERAuditError):
    """The database cannot be opened or written (locked, corrupt, newer schema)."""


class CancelledError(ERAuditError):
    """A run was cancelled by the user; what was stored stays stored."""


class IncompleteScores(InputError):
    """A backend failed part-way through a batch of questions.

    `completed` maps the position (in the batch it was given) of every question it did score
    to that score, so the caller can keep them and never ask for them again; nothing about the
    unfinished questions is kept (no half-written score)."""

    def __init__(self, message: str, completed: dict[int, Any]) -> None:
        super().__init__(message)
        self.completed = completed
