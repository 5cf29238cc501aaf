"""The one HTTP client for every OpenAI-compatible call (served verifiers, paraphrase endpoints).

Why httpx + tenacity: httpx pools connections, applies timeouts and is safe to share between
threads (the served verifier keeps many requests in flight from a thread pool); tenacity runs
the retry loop (exponential backoff, optional jitter) so no caller hand-writes one. What is
retried: dropped or refused connections, timeouts, answers that are not JSON, and HTTP 408,
409, 425, 429, 500, 502, 503, 504, waiting at least as long as a `Retry-After` header asks, up
to two minutes and never longer than the client's timeout: a server asking for more than the
auditor allowed a request is retried after the timeout, and the last error quotes what it
asked. Any other 4xx fails at once. After the last attempt the error names the
server, the route and what was asked, so an auditor can tell which request broke.

API keys are read from an environment variable at request time and sent as a bearer token;
they are never stored or logged (settings record the variable's name only).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import tenacity

from eraudit_core.errors import InputError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 120.0
DETAIL_CHARS = 300


class EndpointError(InputError):
    """An OpenAI-compatible server gave no usable answer (unreachable, refused, malformed).

    `status` is the last HTTP status the server answered with (None: no HTTP answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _Transient(Exception):
    """One failed attempt that is worth another try."""

    def __init__(
        self, reason: str, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status


@dataclass(frozen=True)
class Traffic:
    """What a client has done so far (cumulative), and what it is waiting for now."""

    in_flight: int
    requests: int
    retries: int
    failures: int


def server_root(base_url: str) -> str:
    """scheme://host:port of a base URL such as http://host:8000/v1 (for root-level routes
    like vLLM's /tokenize or llama-cpp-python's /extras/tokenize)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


# user[:password]@ right after the scheme (the host part ends at the first / ? or #)
_USERINFO = re.compile(r"(?i)\b(https?://)([^/?#@\s]*)@")


def mask_credentials(text: str) -> str:
    """`http://alice:PASSWORD@host` shown as `http://alice:***@host` (anywhere in `text`)."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2).split(':', 1)[0]}:***@", text)


def refuse_credentials(text: str, what: str) -> None:
    """Refuse a URL with user:password@ before anything is stored: the URL goes into runs,
    reports, exports and bundles, and Basic auth would replace the api_key_env bearer token.
    The message masks the password."""
    found = _USERINFO.search(text or "")
    if found:
        raise InputError(
            f"{mask_credentials(what)}: the URL carries credentials "
            f"({mask_credentials(found.group(0))}); a URL is stored with the run "
            "and printed in reports, so take them out and put the key in an environment "
            "variable named by api_key_env=VAR"
        )


def check_base_url(base_url: str, what: str) -> str:
    """The URL without a trailing slash; refuse anything that is not http(s)://host[:port]/...,
    carries credentials, or names a host that is not plain text."""
    refuse_credentials(base_url, what)
    url = (base_url or "").strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InputError(f"{what}: base_url is not a valid URL ({exc}): {base_url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"{what}: base_url must start with http(s)://HOST, got {base_url!r}")
    if parts.query or parts.fragment:
        raise InputError(f"{what}: base_url must not carry a query or fragment: {base_url!r}")
    host = parts.hostname or ""
    if not host or not all(c.isascii() and c.isprintable() for c in host):
        raise InputError(
            f"{what}: base_url host must be plain ASCII (a name, IPv4 or [IPv6]), got {host!r}"
        )
    return url


def _error_detail(resp: httpx.Response) -> str:
    """The server's own message when it sent the usual {"error": {"message": ...}} shape."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:DETAIL_CHARS]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:DETAIL_CHARS]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:DETAIL_CHARS]
        if isinstance(err, str):
            return err[:DETAIL_CHARS]
    return str(body)[:DETAIL_CHARS]


def _retry_after(value: str | None) -> float | None:
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None


class OpenAIClient:
    """Pooled, retrying JSON client for one OpenAI-compatible server (thread-safe).

    `base_url` is what the server's OpenAI routes hang under (usually ending in /v1); a path
    starting with "/" is taken relative to it, and `root=True` makes it relative to the host.
    `api_key_env` names the environment variable that holds a key (no key: no header).
    `max_requests` caps the attempts this client may ever make (a spending budget).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        jitter: bool = True,
        max_connections: int = 16,
        max_requests: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        what: str = "endpoint",
    ) -> None:
        self.base_url = check_base_url(base_url, what)
        if max_retries < 0 or timeout_s <= 0 or backoff_s < 0 or max_connections < 1:
            raise InputError(
                f"{what}: need max_retries >= 0, backoff_s >= 0, timeout_s > 0 and "
                f"max_connections >= 1"
            )
        self.api_key_env = api_key_env or None
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.jitter = jitter
        self.max_requests = max_requests
        self.what = what
        self._sleep = sleep
        self._lock = threading.Lock()
        self._in_flight = 0
        self._requests = 0
        self._retries = 0
        self._failures = 0
        self._http = httpx.Client(
            timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers={"Accept": "application/json"},
        )

    # -- plumbing -----------------------------------------------------------------------
    def url(self, path: str, *, root: bool = False) -> str:
        return (server_root(self.base_url) if root else self.base_url) + path

    def _headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def traffic(self) -> Traffic:
        with self._lock:
            return Traffic(self._in_flight, self._requests, self._retries, self._failures)

    def close(self) -> None:
        self._http.close()

    def _once(self, method: str, url: str, body: Mapping[str, Any] | None) -> Any:
        with self._lock:
            if self.max_requests is not None and self._requests >= self.max_requests:
                raise EndpointError(
                    f"{url}: request budget of {self.max_requests} requests is used up "
                    "(raise max_requests to allow more)"
                )
            self._requests += 1
            self._in_flight += 1
        try:
            resp = self._http.request(
                method, url, json=dict(body) if body is not None else None, headers=self._headers()
            )
        except httpx.TimeoutException as exc:
            raise _Transient(f"timed out after {self.timeout_s:g} s") from exc
        except httpx.TransportError as exc:
            raise _Transient(f"cannot reach the endpoint ({type(exc).__name__}: {exc})") from exc
        finally:
            with self._lock:
                self._in_flight -= 1
        if resp.status_code in RETRYABLE_STATUS:
            header = resp.headers.get("Retry-After")
            asked = _retry_after(header)
            held = (
                f" (Retry-After {header[:40]!r}; waited at most the timeout of "
                f"{self.timeout_s:g} s)"
                if asked is not None and asked > self.timeout_s
                else ""
            )
            raise _Transient(
                f"HTTP {resp.status_code} {resp.reason_phrase}: {_error_detail(resp)}{held}",
                None if asked is None else min(asked, self.timeout_s),
                resp.status_code,
            )
        if resp.status_code >= 400:
            raise EndpointError(
                f"{url}: HTTP {resp.status_code} {resp.reason_phrase}: {_error_detail(resp)}",
                resp.status_code,
            )
        try:
            return resp.json()
        except ValueError:
            raise _Transient(
                f"response is not JSON: {resp.content[:200]!r}", status=resp.status_code
            ) from None

    def _wait(self) -> Callable[[tenacity.RetryCallState], float]:
        base: Any = tenacity.wait_exponential(multiplier=self.backoff_s, max=self.max_backoff_s)
        if self.jitter:
            base = base + tenacity.wait_random(0, self.backoff_s)

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            asked = getattr(exc, "retry_after", None) or 0.0
            return max(float(base(state)), float(asked))

        return wait

    def _count_retry(self, state: tenacity.RetryCallState) -> None:
        with self._lock:
            self._retries += 1

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        root: bool = False,
        retries: int | None = None,
        what: str = "",
    ) -> Any:
        """Send one request (retrying what is worth retrying) and return the decoded JSON.

        `what` describes the request for the error message (e.g. "completion for pair p1,
        order AB"); `retries` overrides the client's retry count for this call.
        """
        url = self.url(path, root=root)
        attempts = (self.max_retries if retries is None else int(retries)) + 1
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=self._wait(),
            retry=tenacity.retry_if_exception_type(_Transient),
            sleep=self._sleep,
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(method, url, body)
        except _Transient as exc:
            with self._lock:
                self._failures += 1
            asked = f" ({what})" if what else ""
            raise EndpointError(
                f"{method} {url}{asked}: giving up after {attempts} attempt"
                f"{'s' if attempts != 1 else ''}: {exc.reason}. Check that the server is running "
                f"and that the URL ends with /v1 where the server expects it.",
                exc.status,
            ) from exc
        except EndpointError:
            with self._lock:
                self._failures += 1
            raise
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, None, **kwargs)

    def post(self, path: str, body: Mapping[str, Any], **kwargs: Any) -> Any:
        return self.request("POST", path, body, **kwargs)
