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


class AnswerCheckError(InputError):
    """A scored prompt whose label log-probs are not an answer to keep: its two labels carry
    too little of the model's probability where they are read (and neither is the most likely
    next token), or the values are not log-probabilities of one distribution (NaN, a sum above
    1, a top-k that cannot be the top of any distribution over the vocabulary).

    The query's score is not stored; a run that meets one stops `failed` and can be resumed
    once the checkpoint answers again. `where` names the prompt, `values` the label
    log-probs (l_A, l_B) that were refused."""

    def __init__(self, message: str, where: str = "", values: tuple[float, ...] = ()) -> None:
        super().__init__(message)
        self.where = where
        self.values = values
