"""Several servers of one model (`url1|url2#MODEL;...`) as one verifier.

Why: a model that fits on one GPU is served fastest by data-parallel replicas, one vLLM per
GPU. Each replica is a full `ServedVerifier`: its server facts, tokenization and probe are
checked on its own, and a replica whose probe log-probs differ from the first replica's by more
than the probe tolerance (other weights behind the same name) is refused by URL before any
question is scored. Questions are spread round robin over the replicas and scored in parallel;
each replica keeps its own `concurrency` requests in flight.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from eraudit_core.errors import IncompleteScores, InputError
from eraudit_core.types import Query, QueryScore
from eraudit_core.verifier._chat import ChatFormat
from eraudit_core.verifier.served._handshake import PROBE_TOLERANCE_NATS, _fmt, _gap
from eraudit_core.verifier.served._verifier import ServedVerifier


class ServedReplicas:
    """Implements `types.Verifier` over the replicas of `spec` (one `ServedVerifier` each)."""

    io_bound = True

    def __init__(self, name: str, replicas: Sequence[ServedVerifier]) -> None:
        if len(replicas) < 2:
            raise ValueError("ServedReplicas needs two or more replicas")
        self._name = name
        self.replicas = list(replicas)
        self._pool = ThreadPoolExecutor(len(replicas), thread_name_prefix="replica")
        self._next = 0  # round robin: the replica that gets the next question

    @property
    def name(self) -> str:
        return self._name

    @property
    def format(self) -> ChatFormat:
        return self.replicas[0].format

    @property
    def labels(self) -> tuple[str, str]:
        return self.replicas[0].labels

    def render(self, query: Query) -> tuple[str, str]:
        return self.replicas[0].render(query)

    @property
    def fingerprint(self) -> str:
        """One identity for the set: the replicas' fingerprints, in URL order-free form."""
        parts = sorted(r.fingerprint for r in self.replicas)
        text = json.dumps({"kind": "served-replicas", "replicas": parts})
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def connect(self) -> None:
        """Connect every replica (each runs its own checks and probe) and compare them."""
        for r in self.replicas:
            r.connect()
        self.check_same_weights()

    def check_same_weights(self) -> None:
        """Refuse a replica that answers the probe differently from the first: it serves other
        weights (each replica is connected, so each has scored the probe)."""
        first = self.replicas[0]
        ref = first.probe_logprobs or ()
        for r in self.replicas[1:]:
            now = r.probe_logprobs or ()
            gap = _gap(ref, now)
            if gap > PROBE_TOLERANCE_NATS:
                raise InputError(
                    f"checkpoint {self.name}: replica {r.spec.base_url} serves different "
                    f"weights under {r.spec.model!r} than replica {first.spec.base_url}: the "
                    f"probe question's label log-probs differ by {gap:.3f} nats (tolerance "
                    f"{PROBE_TOLERANCE_NATS}; {_fmt(ref)} there, {_fmt(now)} here). Serve the "
                    "same weights on every replica, or drop that replica from the spec"
                )

    def describe(self) -> dict[str, Any]:
        info = self.replicas[0].describe()
        info.update(
            name=self.name,
            spec=self.name,
            base_url="|".join(r.spec.base_url for r in self.replicas),
            replicas=[
                {
                    "base_url": r.spec.base_url,
                    "served_root": r.describe()["served_root"],
                    "probe_logprobs": list(r.probe_logprobs or ()),
                    "fingerprint": r.fingerprint,
                }
                for r in self.replicas
            ],
            fingerprint=self.fingerprint,
        )
        return info

    def check_registration(self, registered: Mapping[str, Any], registered_at: Any = None) -> None:
        """Every replica must still answer the probe as registered."""
        for r in self.replicas:
            r.check_registration(registered, registered_at)

    def traffic(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for r in self.replicas:
            for key, value in r.traffic().items():
                total[key] = total.get(key, 0) + value
        return total

    def score(self, queries: Sequence[Query]) -> list[QueryScore]:
        """Scores in the order given; distinct questions go round robin to the replicas, all
        replicas at once. On a failure, `IncompleteScores` carries every finished question."""
        keys = [q.prompt_hash for q in queries]
        distinct: dict[str, Query] = {}
        for k, q in zip(keys, queries, strict=True):
            distinct.setdefault(k, q)
        shares: list[list[Query]] = [[] for _ in self.replicas]
        for q in distinct.values():
            shares[self._next].append(q)
            self._next = (self._next + 1) % len(self.replicas)
        futures = [
            self._pool.submit(r.score, share)
            for r, share in zip(self.replicas, shares, strict=True)
            if share
        ]
        active = [share for share in shares if share]
        got: dict[str, QueryScore] = {}
        errors: list[BaseException] = []
        for share, fut in zip(active, futures, strict=True):
            try:
                got.update((q.prompt_hash, s) for q, s in zip(share, fut.result(), strict=True))
            except IncompleteScores as exc:
                got.update((share[i].prompt_hash, s) for i, s in exc.completed.items())
                errors.append(exc)
            except BaseException as exc:
                errors.append(exc)
        if errors:
            done = {i: got[k] for i, k in enumerate(keys) if k in got}
            raise IncompleteScores(
                f"served checkpoint {self.name}: {len(done)} of {len(keys)} questions scored "
                f"before a request failed: {errors[0]}",
                done,
            ) from errors[0]
        return [got[k] for k in keys]

    def forget(self, queries: Sequence[Query]) -> None:
        """Every replica drops what it kept of `queries` (`ServedVerifier.forget`)."""
        for r in self.replicas:
            r.forget(queries)

    def top_is_label(self, queries: Sequence[Query]) -> list[bool]:
        """The label-mass check's second signal (`_label_mass.py`): from the replica that
        scored each query when one did (it kept what its top-k showed), else from the first:
        every replica was checked to serve the same weights."""
        out: list[bool] = []
        for q in queries:
            holder = next(
                (r for r in self.replicas if r.knows_top(q)),
                self.replicas[0],
            )
            out.extend(holder.top_is_label([q]))
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for r in self.replicas:
            r.close()
