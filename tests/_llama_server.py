"""A real llama-cpp-python OpenAI-compatible server for the served-backend tests.

Why a helper module: several test files start, kill and restart the same kind of server. The
server reads every setting it is not given from the environment (API_KEY, MODEL, N_CTX...), so
it starts with a scrubbed environment and every setting on its command line.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "smollm2-demo"
N_CTX = 2048


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` serving one GGUF on 127.0.0.1:port."""

    def __init__(self, gguf: Path, port: int | None = None, log: Path | None = None) -> None:
        self.gguf = gguf
        self.port = port or free_port()
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> LlamaServer:
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.gguf), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(N_CTX), "--logits_all", "true",
            "--n_threads", "2", "--n_threads_batch", "2", "--verbose", "false",
        ]  # fmt: skip
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
        out = self.log.open("ab") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}: {cmd}")
            try:
                if httpx.get(self.url + "/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout_s} s")

    def kill(self) -> None:
        """SIGKILL: the server dies mid-request, as in a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)


class CountingProxy:
    """Forwards every request to `upstream` and logs (route, body, status) of each.

    Why: it sees what reached the server no matter which client sent it, and it can kill the
    server at a chosen request (`kill_at`: the n-th request whose body satisfies `counts`),
    answering 502 like a gateway whose backend died.
    """

    def __init__(self, upstream: LlamaServer) -> None:
        import json
        import threading

        from tests._loopback import Loopback, QuietHandler

        self.upstream = upstream
        self.log: list[tuple[str, dict, int]] = []
        self.kill_at: int | None = None
        self.counts = lambda route, body: route.endswith("/completions")
        self._seen = 0
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=600)
        outer = self

        class Handler(QuietHandler):
            def _forward(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                kill = False
                with outer._lock:
                    if outer.counts(self.path, body):
                        outer._seen += 1
                        kill = outer.kill_at is not None and outer._seen == outer.kill_at
                if kill:
                    outer.upstream.kill()
                base = f"http://127.0.0.1:{outer.upstream.port}"
                try:
                    resp = outer._http.request(
                        method, base + self.path, content=raw or None,
                        headers={"Content-Type": "application/json"},
                    )  # fmt: skip
                    status, content = resp.status_code, resp.content
                except httpx.HTTPError as exc:
                    status, content = 502, json.dumps({"error": {"message": str(exc)}}).encode()
                with outer._lock:
                    outer.log.append((self.path, body, status))
                self.send_json(status, content)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._forward("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._forward("POST")

        self._server = Loopback(Handler)
        self.url = self._server.url

    def close(self) -> None:
        self._server.close()
        self._http.close()


_SHARED: list[LlamaServer] = []


def shared_server() -> LlamaServer:
    """One demo-model server for every test module of this pytest process (started on first
    use, stopped at exit): its load-time checks are paid once, not once per module."""
    import atexit

    from eraudit_core.verifier.hf import demo_gguf_path

    if not _SHARED or _SHARED[0].proc is None or _SHARED[0].proc.poll() is not None:
        server = LlamaServer(demo_gguf_path()).start()
        atexit.register(server.stop)
        _SHARED[:] = [server]
    return _SHARED[0]
