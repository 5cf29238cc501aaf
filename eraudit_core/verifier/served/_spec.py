"""Served checkpoint specs: one string names a checkpoint that an OpenAI-compatible server runs.

    http(s)://HOST:PORT/v1[|http(s)://HOST2:PORT/v1...]#SERVED_MODEL_NAME;tokenizer=LOCAL_SPEC[;...]

The part before `#` is the server's OpenAI base URL (or several, `|`-separated: replicas of
one model, e.g. vLLM data-parallel servers, each checked to serve the same weights), then the served model name (vLLM's
`--served-model-name`, llama-cpp-python's `--model_alias`). `tokenizer=` names a local
checkpoint spec (`demo:base`, a directory, a `.gguf` file) whose tokenizer and chat template
render the prompts; only its tokenizer is read, never its weights. Optional settings:
`api_key_env=VAR` (the environment variable holding a key; the key itself is never part of a
spec, a store or a report), `concurrency=N` requests in flight (default 8), `batch=N` prompts
in one request, sent as a list (default 1; with concurrency 8 and batch 8 up to 64 prompts are
in flight; servers that refuse a list get one prompt a request), `timeout=S` seconds
per request (default 300: it includes queueing on a busy server), `retries=N` (default 4),
`top_k=N` next-token log-probs asked for (default 20, vLLM's default --max-logprobs), `method=`
`auto` (next-token top-k when both labels are in it, else prompt log-probs) or `prompt` (always
prompt log-probs of prompt + label), `readout=NAME` (the readout profile, default detected from
the tokenizer's chat template), and `revision=NAME` (part of the fingerprint: name a new
revision when the same server and model name now serve other weights).

Parsing never contacts the server and never loads a model.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, fields, replace
from typing import Literal
from urllib.parse import urlsplit

from eraudit_core.errors import InputError
from eraudit_core.openai_http import check_base_url, refuse_credentials
from eraudit_core.verifier._readout import get_readout
from eraudit_core.verifier._spec import CheckpointSpec

SERVED_PREFIXES = ("http://", "https://")
METHODS = ("auto", "prompt")
MAX_TIMEOUT_S = 86_400.0  # a day; inf or NaN would wait forever
MAX_BATCH = 1024  # prompts in one request; vLLM queues what its scheduler cannot take at once
# C0 and C1 controls, DEL and bidi overrides: none belongs in a spec
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class ServedSpec:
    """A checkpoint behind an OpenAI-compatible completions server. `text` round-trips."""

    base_url: str
    model: str
    tokenizer: str
    api_key_env: str | None = None
    concurrency: int = 8
    batch: int = 1
    timeout: float = 300.0
    retries: int = 4
    top_k: int = 20
    method: Literal["auto", "prompt"] = "auto"
    revision: str = ""
    readout: str = ""

    kind = "served"

    def __post_init__(self) -> None:
        for name in ("base_url", "model", "tokenizer", "revision", "api_key_env", "readout"):
            found = _CONTROL.search(getattr(self, name) or "")
            if found:  # an escape sequence would enter the fingerprint and every message
                raise InputError(
                    f"served checkpoint: field {name} contains the control character "
                    f"{found.group().encode('unicode_escape').decode('ascii')}; a spec is "
                    "plain text"
                )
        where = f"served checkpoint {self.base_url}#{self.model}"
        urls = [check_base_url(u, where) for u in self.base_url.split("|")]
        if len(set(urls)) != len(urls):
            raise InputError(f"{where}: a replica URL is named twice")
        if len(urls) > 1:
            _refuse_same_server(urls, where)
        object.__setattr__(self, "base_url", "|".join(urls))
        if not self.model.strip():
            raise InputError(f"{where}: name the served model after '#'")
        if self.tokenizer.strip().startswith(SERVED_PREFIXES):
            raise InputError(f"{where}: tokenizer= must name a local checkpoint, not a server")
        if not 1 <= self.concurrency <= 1024:
            raise InputError(f"{where}: concurrency must lie in 1..1024, got {self.concurrency}")
        if not 1 <= self.batch <= MAX_BATCH:
            raise InputError(
                f"{where}: batch (prompts in one request) must lie in 1..{MAX_BATCH}, "
                f"got {self.batch}"
            )
        if not 0 < self.timeout <= MAX_TIMEOUT_S:
            raise InputError(
                f"{where}: timeout must be seconds in (0, {MAX_TIMEOUT_S}], got {self.timeout}"
            )
        if not 0 <= self.retries <= 20:
            raise InputError(f"{where}: retries must lie in 0..20, got {self.retries}")
        if not 2 <= self.top_k <= 1000:
            raise InputError(f"{where}: top_k must lie in 2..1000, got {self.top_k}")
        if self.method not in METHODS:
            raise InputError(f"{where}: method must be one of {METHODS}, got {self.method!r}")
        if self.readout:
            get_readout(self.readout)
        for name in ("model", "tokenizer", "revision", "api_key_env"):
            value = getattr(self, name) or ""
            if any(c in value for c in ";#\n"):
                raise InputError(f"{where}: field {name} must not contain ';', '#' or newlines")
        if self.api_key_env is not None and not self.api_key_env.replace("_", "").isalnum():
            raise InputError(
                f"{where}: api_key_env names an environment variable (letters, digits, _), got "
                f"{self.api_key_env!r}; never put the key itself in a spec"
            )

    @classmethod
    def parse(cls, text: str) -> ServedSpec:
        text = text.strip()
        refuse_credentials(text, "served checkpoint")  # before any message repeats the text
        found = _CONTROL.search(text)
        if found:
            raise InputError(
                f"checkpoint {text!r}: contains the control character "
                f"{found.group().encode('unicode_escape').decode('ascii')} at character "
                f"{found.start()}; a spec is plain text"
            )
        url, sep, rest = text.partition("#")
        if not sep:
            raise InputError(
                f"checkpoint {text!r}: a served checkpoint needs '#MODEL;tokenizer=LOCAL_SPEC' "
                "after the URL, e.g. http://127.0.0.1:8000/v1#my-model;tokenizer=demo:base"
            )
        model, *options = rest.split(";")
        known = {f.name for f in fields(cls)} - {"base_url", "model"}
        values: dict[str, object] = {}
        for option in options:
            key, eq, value = option.partition("=")
            key = key.strip()
            if not eq or key not in known:
                raise InputError(
                    f"checkpoint {text!r}: unknown setting {option!r}; use "
                    f"{', '.join(sorted(k + '=' for k in known))}"
                )
            if key in values:
                raise InputError(f"checkpoint {text!r}: setting {key} given twice")
            values[key] = _convert(text, key, value.strip())
        if "tokenizer" not in values:
            raise InputError(
                f"checkpoint {text!r}: add ;tokenizer=LOCAL_SPEC (e.g. demo:base or a directory "
                "with the served model's tokenizer); prompts are rendered and checked locally"
            )
        spec = cls(base_url=url, model=model.strip(), **values)  # type: ignore[arg-type]
        spec.tokenizer_spec  # noqa: B018 - refuse a tokenizer spec that names nothing here
        return spec

    @property
    def replicas(self) -> list[str]:
        """The base URLs of the replicas (one for a single server)."""
        return self.base_url.split("|")

    @property
    def tokenizer_spec(self) -> CheckpointSpec:
        """The local checkpoint whose tokenizer renders the prompts (checked to exist)."""
        try:
            return CheckpointSpec.parse(self.tokenizer)
        except InputError as exc:
            raise InputError(f"served checkpoint {self.text}: tokenizer= {exc}") from exc

    @property
    def text(self) -> str:
        parts = [f"{self.base_url}#{self.model}", f"tokenizer={self.tokenizer}"]
        for f in fields(self):
            if f.name in ("base_url", "model", "tokenizer"):
                continue
            value = getattr(self, f.name)
            if value != f.default:
                parts.append(f"{f.name}={_show(value)}")
        return ";".join(parts)

    def with_options(self, **changes: object) -> ServedSpec:
        return replace(self, **changes)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return self.text


def _addresses(url: str) -> set[tuple[str, int, str]]:
    """(address, port, path) triples a base URL reaches: its host resolved (localhost and
    127.0.0.1 are one server); the host name itself when it does not resolve here."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = parts.path.rstrip("/")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return {(host, port, path)}
    return {(str(info[4][0]), port, path) for info in infos}


def _refuse_same_server(urls: list[str], where: str) -> None:
    """Two replica URLs that reach one server would count it twice (and score each question
    on it as if two independent replicas had agreed)."""
    seen: list[tuple[str, set[tuple[str, int, str]]]] = []
    for url in urls:
        mine = _addresses(url)
        for other, theirs in seen:
            common = mine & theirs
            if common:
                addr, port, _ = sorted(common)[0]
                raise InputError(
                    f"{where}: replicas {other} and {url} are the same server ({addr}:{port}); "
                    "name each replica once"
                )
        seen.append((url, mine))


def _convert(text: str, key: str, value: str) -> object:
    if key in ("concurrency", "batch", "retries", "top_k"):
        try:
            return int(value)
        except ValueError:
            raise InputError(
                f"checkpoint {text!r}: {key} must be an integer, got {value!r}"
            ) from None
    if key == "timeout":
        try:
            return float(value)
        except ValueError:
            raise InputError(
                f"checkpoint {text!r}: timeout must be seconds, got {value!r}"
            ) from None
    return value


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def is_served(text: str) -> bool:
    return text.strip().startswith(SERVED_PREFIXES)


def parse_spec(text: str | CheckpointSpec | ServedSpec) -> CheckpointSpec | ServedSpec:
    """A served spec for http(s) URLs, a local `CheckpointSpec` otherwise."""
    if isinstance(text, CheckpointSpec | ServedSpec):
        return text
    return ServedSpec.parse(text) if is_served(text) else CheckpointSpec.parse(text)
