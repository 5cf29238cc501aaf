"""The score cache in front of a verifier (docs/design.md §4): no (fingerprint, prompt) is
scored twice, across pairs, runs and resumes. The engine scores every question through it."""

from __future__ import annotations

from collections.abc import Sequence

from eraudit_core.errors import AnswerCheckError, IncompleteScores
from eraudit_core.store import Store
from eraudit_core.types import Query, QueryScore, Verifier
from eraudit_core.verifier import check_answers


class CachedScorer:
    """A verifier behind the store's score cache: no (fingerprint, prompt) is scored twice.

    `begin_pair` reads the cached scores of a pair's queries in one store read, so scoring a
    batch needs no read. Fresh scores are written at once, or kept in `unwritten` for the
    caller to write with the batch's steps (`score(..., write=False)`).

    Every score it returns has passed the per-prompt answer check (`check_answers`): a fresh
    one against `min_label_mass` before it is written, a cached one for valid values (it met
    the minimum of the run that scored it). A prompt that fails raises AnswerCheckError and
    nothing of its batch is written.
    """

    def __init__(
        self,
        verifier: Verifier,
        store: Store,
        *,
        imported: bool = False,
        min_label_mass: float = 0.0,
    ) -> None:
        self.verifier = verifier
        self.min_label_mass = min_label_mass
        self.store = store
        self.imported = imported  # also read scores imported from bundles (the user asked)
        self.fingerprint = verifier.fingerprint
        self.scored = 0
        self.cached = 0
        self.unwritten: dict[str, QueryScore] = {}
        self._known: dict[str, QueryScore] = {}
        self._looked_up: set[str] = set()

    def begin_pair(self, queries: Sequence[Query]) -> None:
        """Forget the previous pair and read what the cache has for these queries."""
        self._known, self._looked_up = {}, set()
        self._look_up([q.prompt_hash for q in queries])

    def _look_up(self, hashes: Sequence[str]) -> None:
        todo = [h for h in dict.fromkeys(hashes) if h not in self._looked_up]
        if todo:
            self._known.update(
                self.store.cached_scores(self.fingerprint, todo, imported=self.imported)
            )
            self._looked_up.update(todo)

    def score(self, queries: Sequence[Query], *, write: bool = True) -> list[QueryScore]:
        hashes = [q.prompt_hash for q in queries]
        self._look_up(hashes)
        missing: dict[str, Query] = {}
        for q, h in zip(queries, hashes, strict=True):
            if h not in self._known and h not in missing:
                missing[h] = q
        cached = {h: q for h, q in zip(hashes, queries, strict=True) if h not in missing}
        check_answers(self.verifier, list(cached.values()), [self._known[h] for h in cached], 0.0)
        if missing:
            try:
                fresh = self.verifier.score(list(missing.values()))
            except IncompleteScores as exc:
                # Keep what the backend finished before it failed: a resumed run asks the
                # server only for the rest. Nothing of an unfinished question is written.
                hashes_missing = list(missing)
                kept = {hashes_missing[i]: s for i, s in exc.completed.items()}
                self.store.put_scores(self.fingerprint, {**self.take_unwritten(), **kept})
                self.scored += len(kept)
                raise
            if len(fresh) != len(missing):
                raise RuntimeError(
                    f"verifier {self.fingerprint} returned {len(fresh)} scores for "
                    f"{len(missing)} queries"
                )
            try:
                check_answers(self.verifier, list(missing.values()), fresh, self.min_label_mass)
            except AnswerCheckError:
                forget = getattr(self.verifier, "forget", None)
                if forget is not None:  # a served checkpoint that heals is asked again
                    forget(list(missing.values()))
                raise
            new = dict(zip(missing, fresh, strict=True))
            if write:
                self.store.put_scores(self.fingerprint, new)
            else:
                self.unwritten.update(new)
            self._known.update(new)
        self.scored += len(missing)
        self.cached += len(queries) - len(missing)
        return [self._known[h] for h in hashes]

    def unknown(self, queries: Sequence[Query]) -> list[Query]:
        """The queries neither the store nor this scorer has a score for."""
        self._look_up([q.prompt_hash for q in queries])
        return [q for q in queries if q.prompt_hash not in self._known]

    def take_unwritten(self) -> dict[str, QueryScore]:
        out, self.unwritten = self.unwritten, {}
        return out
