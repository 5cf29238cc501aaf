"""Which resource condition and behaviour a rollout belongs to (docs/design.md §8).

Petri does not record the seed-003 condition as such: it lives in the run's task arguments
(`max_turns`, `enable_prefill`, `realism_filter`, ...), in the directory the run was written to,
in eval or sample tags, or only in the seed-instruction text. A mapping file names each
condition and behaviour by any of these. Two forms, mixable in one file:

    {"condition": {"res-none": "none"}, ...}                  # key (tag or seed id) -> name
    {"condition": {"lean": {"task_args": {"max_turns": 4}}}}   # name -> rule (or list of rules)

A rule object may hold `task_args` ({arg: value}, values compared as values: 4 == 4.0, but
True is not 1), `directory` (a folder name, or several as "a/b", on the file's path), `tag`
(a tag or a list of tags, all required), `seed` (a seed / sample id, or a list: any) and
`seed_text` (a substring of the seed instruction). Every field given must hold; a list of rule
objects matches when any of them does. A rollout must match exactly one condition and one
behaviour, otherwise it is dropped with the reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eraudit_core.errors import InputError

RULE_FIELDS = ("task_args", "directory", "tag", "seed", "seed_text")


@dataclass(frozen=True)
class RolloutContext:
    """What Petri recorded about a rollout that a mapping can name a condition by."""

    tags: tuple[str, ...] = ()
    seed_id: str | None = None
    seed_text: str | None = None
    task_args: Mapping[str, Any] = field(default_factory=dict)
    directories: tuple[str, ...] = ()

    def describe(self) -> str:
        """A short description for drop reasons (what was looked at)."""
        parts = [f"tags [{', '.join(self.tags)}]" if self.tags else "no tags"]
        if self.seed_id is not None:
            parts.append(f"seed id {self.seed_id}")
        if self.directories:
            parts.append(f"directory {self.directories[-1]}")
        if self.task_args:
            parts.append(f"{len(self.task_args)} task args")
        return ", ".join(parts)


def same_value(a: Any, b: Any) -> bool:
    """Task-argument equality by value: 4 == 4.0 and 0.6 == 0.6, but True != 1, "4" != 4."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=1e-12)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


@dataclass(frozen=True)
class Rule:
    """One rule object of the mapping file: every field given must hold."""

    task_args: Mapping[str, Any] = field(default_factory=dict)
    directory: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()
    seed_text: str | None = None

    def matches(self, ctx: RolloutContext) -> bool:
        for name, want in self.task_args.items():
            if name not in ctx.task_args or not same_value(ctx.task_args[name], want):
                return False
        if self.directory and not _contains_run(ctx.directories, self.directory):
            return False
        if self.tags and not set(self.tags) <= set(ctx.tags):
            return False
        if self.seeds and ctx.seed_id not in self.seeds:
            return False
        return self.seed_text is None or (
            ctx.seed_text is not None and self.seed_text in ctx.seed_text
        )


def _contains_run(parts: Sequence[str], run: Sequence[str]) -> bool:
    n = len(run)
    return any(tuple(parts[i : i + n]) == tuple(run) for i in range(len(parts) - n + 1))


def _bad(source: str, path: str, message: str) -> InputError:
    return InputError(f"{source}: field '{path}': {message}")


def _str_list(value: Any, source: str, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _bad(source, path, "must be a string or a non-empty list of strings")


def _parse_rule(raw: Any, source: str, path: str) -> Rule:
    if not isinstance(raw, dict) or not raw:
        raise _bad(source, path, "a rule must be a non-empty object")
    unknown = sorted(set(raw) - set(RULE_FIELDS))
    if unknown:
        raise _bad(
            source,
            path,
            f"unknown field(s) {', '.join(unknown)}; a rule may use {', '.join(RULE_FIELDS)}",
        )
    task_args = raw.get("task_args", {})
    if not isinstance(task_args, dict) or ("task_args" in raw and not task_args):
        raise _bad(source, f"{path}.task_args", "must be a non-empty object {arg: value}")
    directory: tuple[str, ...] = ()
    if "directory" in raw:
        if not isinstance(raw["directory"], str) or not raw["directory"].strip("/"):
            raise _bad(source, f"{path}.directory", 'must be a folder name such as "turns3"')
        directory = tuple(p for p in raw["directory"].split("/") if p)
    seed_text = raw.get("seed_text")
    if "seed_text" in raw and (not isinstance(seed_text, str) or not seed_text):
        raise _bad(source, f"{path}.seed_text", "must be a non-empty string")
    return Rule(
        task_args=dict(task_args),
        directory=directory,
        tags=_str_list(raw["tag"], source, f"{path}.tag") if "tag" in raw else (),
        seeds=_str_list(raw["seed"], source, f"{path}.seed") if "seed" in raw else (),
        seed_text=seed_text,
    )


@dataclass(frozen=True)
class TagMapping:
    """Maps a rollout to its resource condition and behaviour (see the module docstring).

    `condition` / `behaviour` hold the original form: exact tag strings or seed ids -> name.
    `condition_rules` / `behaviour_rules` hold name -> rules. A rollout must match exactly one
    name in each (several keys or rules naming the same value are fine).
    """

    condition: Mapping[str, str] = field(default_factory=dict)
    behaviour: Mapping[str, str] = field(default_factory=dict)
    condition_rules: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)
    behaviour_rules: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Any, source: str = "<mapping>") -> TagMapping:
        """Parse the mapping object; errors name the source and the field."""
        if not isinstance(raw, dict):
            raise InputError(f"{source}: expected a JSON object with 'condition' and 'behaviour'")
        parts: dict[str, tuple[dict[str, str], dict[str, tuple[Rule, ...]]]] = {}
        for name in ("condition", "behaviour"):
            part = raw.get(name)
            if not isinstance(part, dict) or not part:
                raise InputError(
                    f"{source}: field '{name}' must be a non-empty object "
                    "({tag_or_seed: name} or {name: rule})"
                )
            keys: dict[str, str] = {}
            rules: dict[str, tuple[Rule, ...]] = {}
            for k, v in part.items():
                path = f"{name}.{k}"
                if isinstance(v, str):
                    keys[k] = v
                elif isinstance(v, dict):
                    rules[k] = (_parse_rule(v, source, path),)
                elif isinstance(v, list) and v:
                    rules[k] = tuple(
                        _parse_rule(r, source, f"{path}[{i}]") for i, r in enumerate(v)
                    )
                else:
                    raise _bad(source, path, "must be a name (string), a rule object or a list")
            parts[name] = (keys, rules)
        extra = sorted(set(raw) - {"condition", "behaviour"})
        if extra:
            raise InputError(f"{source}: unknown field(s) {', '.join(extra)}")
        return cls(
            condition=parts["condition"][0],
            behaviour=parts["behaviour"][0],
            condition_rules=parts["condition"][1],
            behaviour_rules=parts["behaviour"][1],
        )

    @classmethod
    def from_json(cls, path: str | Path) -> TagMapping:
        """Read a mapping file (see the module docstring for the format)."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InputError(f"{path}: mapping file not found") from exc
        except (UnicodeDecodeError, RecursionError) as exc:
            raise InputError(f"{path}: not a readable JSON mapping ({exc})") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        return cls.from_dict(raw, str(path))

    def _names(
        self, keys: Mapping[str, str], rules: Mapping[str, tuple[Rule, ...]], ctx: RolloutContext
    ) -> list[str]:
        lookup = list(ctx.tags) + ([ctx.seed_id] if ctx.seed_id is not None else [])
        hits = {keys[k] for k in lookup if k in keys}
        hits |= {name for name, rs in rules.items() if any(r.matches(ctx) for r in rs)}
        return sorted(hits)

    def resolve_context(
        self, ctx: RolloutContext
    ) -> tuple[str | None, str | None, str | None, str | None]:
        """(condition, behaviour, code, reason); code and reason are set when either fails."""
        out: list[str] = []
        for name, keys, rules in (
            ("condition", self.condition, self.condition_rules),
            ("behaviour", self.behaviour, self.behaviour_rules),
        ):
            hits = self._names(keys, rules, ctx)
            if len(hits) == 1:
                out.append(hits[0])
                continue
            if hits:
                return (
                    None,
                    None,
                    f"ambiguous_{name}",
                    (f"ambiguous {name}: {ctx.describe()} match {', '.join(hits)}"),
                )
            return None, None, f"unmapped_{name}", f"no {name} mapping matches {ctx.describe()}"
        return out[0], out[1], None, None

    def resolve(self, keys: Iterable[str]) -> tuple[str | None, str | None, str | None]:
        """The original interface: (condition, behaviour, reason) from tags and seed ids."""
        keys = list(keys)
        condition, behaviour, _code, reason = self.resolve_context(RolloutContext(tags=tuple(keys)))
        if reason is not None:
            shown = ", ".join(keys) if keys else "none"
            reason = reason.replace(RolloutContext(tags=tuple(keys)).describe(), f"[{shown}]")
        return condition, behaviour, reason
