"""The `ParaphraseGenerator` protocol and its name-keyed registry (docs/design.md §5).

Generators register themselves with `register_generator`, so the CLI and the dashboard list
what exists without a hand-kept list. The built-in ones are imported lazily (the Hugging Face
one pulls torch).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from eraudit_core.errors import InputError

# Modules whose import registers the built-in generators (kept lazy: the HF one pulls torch).
_BUILTIN_MODULES = (
    "eraudit_core.paraphrase._rules",
    "eraudit_core.paraphrase._endpoint",
    "eraudit_core.paraphrase._hf",
)


# --------------------------------------------------------------------------------------------
# Generator protocol and registry


@runtime_checkable
class ParaphraseGenerator(Protocol):
    """Produces candidate rewrites of one hidden question.

    `name` is what is stored with each paraphrase (e.g. ``rules-a``); `kind` is the registry
    name of the implementation (e.g. ``rules``). Generators see only the question text, never
    the answer options, so they cannot be steered towards or away from an answer.
    """

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def version(self) -> str: ...

    def settings(self) -> dict[str, Any]:
        """Everything needed to reproduce the output (never secrets such as API keys)."""
        ...

    def generate(self, pair_id: str, question: str, n: int) -> list[str]:
        """Up to `n` candidate paraphrases of `question` (unfiltered; may contain junk)."""
        ...


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator kind: how to build it and a one-line description for listings."""

    kind: str
    factory: Callable[..., ParaphraseGenerator]
    summary: str
    offline: bool


_REGISTRY: dict[str, GeneratorSpec] = {}


def register_generator(
    kind: str, *, offline: bool, summary: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make a generator kind constructible by name (`create_generator`)."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        doc = (factory.__doc__ or "").strip().splitlines()
        _REGISTRY[kind] = GeneratorSpec(
            kind=kind,
            factory=factory,
            summary=summary or (doc[0] if doc else kind),
            offline=offline,
        )
        return factory

    return decorate


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)


def available_generators() -> dict[str, GeneratorSpec]:
    """All registered generator kinds, by name (imports the built-in ones on first call)."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def create_generator(kind: str, **settings: Any) -> ParaphraseGenerator:
    """Build a generator of a registered kind; unknown kinds or settings raise InputError."""
    specs = available_generators()
    if kind not in specs:
        raise InputError(f"unknown paraphrase generator {kind!r}; choose one of {sorted(specs)}")
    try:
        return specs[kind].factory(**settings)
    except TypeError as exc:
        raise InputError(f"generator {kind!r}: bad settings {sorted(settings)}: {exc}") from exc


def generator_provenance(generator: ParaphraseGenerator) -> dict[str, Any]:
    """What is stored with every paraphrase of a generator: kind, name, version, settings."""
    return {
        "kind": generator.kind,
        "name": generator.name,
        "version": generator.version,
        "settings": generator.settings(),
    }
