"""A disk cache of a base model's hidden states entering its first adapted layer.

Why: top-layer LoRA never changes the layers below L, so what enters layer L is a function of
the base weights and the token ids alone. Computed once (the slow part: every layer below L
over every training token), it serves both debate arms, every epoch, and any rerun. Each
sequence is one safetensors file named by the content digest of (model fingerprint, L, storage
dtype, token ids) and carries the sha256 of its own tensor bytes, checked on every read; a file
that fails the check is recomputed, never used. The cache lives under the user cache
(`~/.cache/eraudit/trunk`, or a folder given), never in the repository.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError
from eraudit_core.paths import cache_dir

log = logging.getLogger(__name__)

STORE_DTYPES = ("float32", "float16")
Layout = tuple[int, int, int]  # a packed sequence's (prompt, tail, grounded) token counts


@dataclass
class TrunkStats:
    """What one `ensure` call did: sequences found on disk, computed, and at what speed."""

    found: int = 0
    computed: int = 0
    tokens_computed: int = 0
    seconds: float = 0.0
    stopped: bool = False  # the deadline came first: what was computed is on disk

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_computed / self.seconds if self.seconds > 0 else 0.0


class TrunkCache:
    """Hidden states entering decoder layer `split` of one base model, per token sequence.

    `model` computes missing states (a PEFT-wrapped base is fine: adapters are switched off for
    the trunk); `fingerprint` names its weights (changing weights must change it).
    """

    def __init__(
        self,
        model: Any,
        *,
        fingerprint: str,
        split: int,
        pad_id: int,
        root: Path | None = None,
        store_dtype: str = "float32",
        batch_size: int = 4,
    ) -> None:
        if store_dtype not in STORE_DTYPES:
            raise InputError(
                f"trunk cache dtype: expected one of {STORE_DTYPES}, got {store_dtype}"
            )
        if split < 1:
            raise InputError(f"trunk cache layer: must be at least 1, got {split}")
        self.model = model
        self.fingerprint = fingerprint
        self.split = split
        self.pad_id = pad_id
        self.store_dtype = store_dtype
        self.batch_size = batch_size
        base = Path(root) if root is not None else cache_dir() / "trunk"
        self.dir = base / f"{fingerprint[:24]}-L{split}-{store_dtype}"

    # -- names ----------------------------------------------------------------------------
    def key(self, ids: Sequence[int], layout: Layout | None = None) -> str:
        """Content digest of everything the cached states depend on (a packed sequence's
        layout included: the same ids packed otherwise give other states)."""
        payload: dict[str, Any] = {
            "model": self.fingerprint,
            "layer": self.split,
            "dtype": self.store_dtype,
            "ids": [int(t) for t in ids],
        }
        if layout is not None:
            payload["layout"] = list(layout)
        return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode()).hexdigest()

    def path(self, ids: Sequence[int], layout: Layout | None = None) -> Path:
        return self.dir / f"{self.key(ids, layout)}.safetensors"

    # -- reading and writing --------------------------------------------------------------
    def _write(self, ids: Sequence[int], h: Any, layout: Layout | None = None) -> None:
        import torch
        from safetensors.torch import save_file

        t = h.to(getattr(torch, self.store_dtype)).contiguous()
        meta = {
            "model": self.fingerprint,
            "layer": str(self.split),
            "tokens": str(len(ids)),
            "key": self.key(ids, layout),
            "data_sha256": _tensor_sha256(t),
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(ids, layout)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        save_file({"h": t}, str(tmp), metadata=meta)
        os.replace(tmp, path)

    def read(self, ids: Sequence[int], layout: Layout | None = None) -> Any | None:
        """The cached states as float32 [tokens, hidden], or None when absent or failing its
        checks (a warning says which; the caller recomputes)."""
        import torch
        from safetensors import safe_open

        path = self.path(ids, layout)
        if not path.is_file():
            return None
        try:
            with safe_open(str(path), framework="pt") as fh:
                meta = fh.metadata() or {}
                t = fh.get_tensor("h")
        except Exception as exc:  # a truncated or foreign file: recompute
            log.warning("trunk cache %s: unreadable (%s); recomputing", path, exc)
            return None
        expected = {
            "model": self.fingerprint,
            "layer": str(self.split),
            "tokens": str(len(ids)),
            "key": self.key(ids, layout),
        }
        bad = [k for k, v in expected.items() if meta.get(k) != v]
        if not bad and meta.get("data_sha256") != _tensor_sha256(t):
            bad = ["data_sha256"]
        if bad or t.dim() != 2 or t.shape[0] != len(ids):
            log.warning("trunk cache %s: fails its check (%s); recomputing", path, bad or "shape")
            return None
        return t.to(torch.float32, copy=True)  # never a view of the mapped file

    def ensure(
        self,
        ids_list: Sequence[Sequence[int]],
        progress: Callable[[str], None] | None = None,
        every: int = 25,
        layouts: Sequence[Layout | None] | None = None,
        deadline: float | None = None,
    ) -> TrunkStats:
        """Compute and store every sequence not yet cached (shortest first, in batches;
        packed sequences, those with a layout, one at a time under their own mask). At
        `deadline` (a `time.time()`) it stops between batches; a later call goes on."""
        from eraudit_core.verifier.hf import trunk_states

        stats = TrunkStats()
        todo: dict[str, tuple[Sequence[int], Layout | None]] = {}
        lays = list(layouts) if layouts is not None else [None] * len(ids_list)
        for ids, layout in zip(ids_list, lays, strict=True):
            k = self.key(ids, layout)
            if k in todo:
                continue
            if self.read(ids, layout) is not None:
                stats.found += 1
            else:
                todo[k] = (ids, layout)
        plain = sorted((x for x in todo.values() if x[1] is None), key=lambda x: len(x[0]))
        packed = sorted((x for x in todo.values() if x[1] is not None), key=lambda x: len(x[0]))
        batches = [plain[b : b + self.batch_size] for b in range(0, len(plain), self.batch_size)]
        batches += [[x] for x in packed]
        total = len(todo)
        start = time.perf_counter()
        for batch in batches:
            if deadline is not None and time.time() >= deadline:
                stats.stopped = True
                break
            if batch[0][1] is None:
                seqs = [ids for ids, _ in batch]
                states = trunk_states(self.model, seqs, self.split, self.pad_id, len(batch))
            else:
                states = [packed_trunk_states(self.model, batch[0][0], batch[0][1], self.split)]
            for (ids, layout), h in zip(batch, states, strict=True):
                self._write(ids, h, layout)
            stats.computed += len(batch)
            stats.tokens_computed += sum(len(ids) for ids, _ in batch)
            stats.seconds = time.perf_counter() - start
            if progress and (stats.computed % every < len(batch) or stats.computed == total):
                progress(
                    f"trunk cache: {stats.computed}/{total} sequences, "
                    f"{stats.tokens_computed} tokens, {stats.tokens_per_second:.0f} tokens/s"
                )
        return stats

    def get(self, ids_list: Sequence[Sequence[int]]) -> list[Any]:
        """States of every sequence (computed first where missing)."""
        self.ensure(ids_list)
        out = []
        for ids in ids_list:
            h = self.read(ids)
            if h is None:
                raise InputError(f"trunk cache {self.path(ids)}: unreadable right after writing")
            out.append(h)
        return out


def verifier_trunk(
    verifier: Any, split: int, root: Path | None = None, store_dtype: str = "float32"
) -> TrunkCache:
    """The trunk cache of a loaded local verifier's base weights (named by their digest and
    dtype), entering layer `split`."""
    loaded = verifier._base
    return TrunkCache(
        loaded.model,
        fingerprint=f"{loaded.weights_digest}-{str(loaded.dtype).removeprefix('torch.')}",
        split=split,
        pad_id=verifier._pad_id,
        root=root,
        store_dtype=store_dtype,
    )


def packed_trunk_states(model: Any, ids: Sequence[int], layout: Layout, split: int) -> Any:
    """States entering layer `split` of one packed sequence (`_fit_objective.packed_layout`),
    without gradients; `model` is a plain base model (no adapter)."""
    import torch

    from eraudit_core.adapt._fit_objective import packed_layout
    from eraudit_core.verifier.hf import layers_only

    pos, mask = packed_layout(*layout)
    with torch.no_grad(), layers_only(model, 0, split, norm=False) as backbone:
        h = backbone(
            input_ids=torch.tensor([list(ids)], dtype=torch.long),
            attention_mask=mask,
            position_ids=pos,
            use_cache=False,
        ).last_hidden_state
    return h[0].detach().cpu().clone()


def _tensor_sha256(t: Any) -> str:
    import torch

    raw = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()
