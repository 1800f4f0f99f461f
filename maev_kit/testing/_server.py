"""A local OpenAI-compatible chat-completions server for tests, benchmarks and demos.

Standard library only. One thread per connection (``ThreadingHTTPServer``), HTTP/1.1
keep-alive, headers and body sent in one write with Nagle disabled (else a delayed ACK costs
~60 ms per call), a listen backlog large enough for hundreds of concurrent connects, and quiet
about clients that hang up (a client timing out is not a server error).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Union

__all__ = [
    "FAIL_MODES",
    "FakeOpenAIServer",
    "FakeReply",
    "LoggedRequest",
    "Responder",
    "hang",
    "http_error",
    "malformed_body",
    "reply",
    "free_port",
    "truncated_body",
]

#: Failure modes a whole server can be put in (``FakeOpenAIServer(fail=...)``,
#: ``maev serve-fake --fail ...``): ``401`` (every request refused as unauthorised), ``429``
#: (rate-limited forever), ``500`` (a server error forever), ``timeout`` (never answers),
#: ``garbage`` (a 200 whose body is not JSON), ``prose`` (a valid completion whose text is not
#: JSON, so no judge can read it). A refused connection needs no server: see :func:`free_port`.
FAIL_MODES: tuple[str, ...] = ("401", "429", "500", "timeout", "garbage", "prose")
_PROSE = "I'm sorry, but I can't help with grading these facts right now."

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass(frozen=True)
class FakeReply:
    """What the server does with one request. Build with :func:`reply`, :func:`http_error`,
    :func:`hang`, :func:`truncated_body` or :func:`malformed_body`."""

    kind: Literal["reply", "error", "hang", "truncated", "malformed"]
    text: str = ""
    status: int = 200
    retry_after: str | None = None
    retry_after_ms: str | None = None
    seconds: float = 0.0
    latency: float | None = None
    finish_reason: str = "stop"


def reply(text: str, *, latency: float | None = None, finish_reason: str = "stop") -> FakeReply:
    """A normal 200 reply whose assistant message is ``text``; ``finish_reason="content_filter"``
    imitates a provider that withheld the answer.

    >>> reply('{"f1": "retained"}').kind
    'reply'
    """
    return FakeReply("reply", text=text, latency=latency, finish_reason=finish_reason)


def http_error(status: int, *, retry_after: float | str | None = None,
               retry_after_ms: float | None = None, message: str = "injected fault") -> FakeReply:
    """An error status (429, 500, 503, ...) with optional ``Retry-After`` / ``retry-after-ms``.

    >>> http_error(429, retry_after=1).retry_after
    '1'
    """
    if not 400 <= status <= 599:
        raise ValueError(f"`status` must be an HTTP error code 400-599, got {status!r}")
    return FakeReply("error", text=message, status=status,
                     retry_after=None if retry_after is None else str(retry_after),
                     retry_after_ms=None if retry_after_ms is None else str(retry_after_ms))


def hang(seconds: float) -> FakeReply:
    """Say nothing for ``seconds`` (set it past the client's timeout), then drop the connection."""
    return FakeReply("hang", seconds=float(seconds))


def truncated_body() -> FakeReply:
    """A 200 whose body stops half-way (Content-Length promises more), then the connection closes."""
    return FakeReply("truncated")


def malformed_body() -> FakeReply:
    """A 200 with ``Content-Type: application/json`` and a body that is not JSON."""
    return FakeReply("malformed")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` where nothing listens (bound once by the OS, then released):
    point a client at it to see a refused connection.

    >>> import socket
    >>> port = free_port()
    >>> with socket.socket() as s:
    ...     s.settimeout(2)
    ...     s.connect_ex(("127.0.0.1", port)) != 0
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _failure(mode: str) -> FakeReply:
    if mode == "timeout":
        return hang(3600.0)  # ended early by stop()
    if mode == "garbage":
        return malformed_body()
    if mode == "prose":
        return reply(_PROSE)
    status = int(mode)
    message = {401: "Incorrect API key provided: sk-test. You can find your API key at "
                    "your provider's dashboard.",
               429: "Rate limit reached for requests. Please try again later.",
               500: "The server had an error while processing your request."}[status]
    return http_error(status, message=message)


#: A responder maps the parsed request body to the assistant's reply text (or a :class:`FakeReply`).
Responder = Callable[[dict[str, Any]], Union[str, FakeReply]]


@dataclass
class LoggedRequest:
    """One request as the server saw it: when it arrived, its JSON body and what was sent back."""

    received_at: float
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]
    outcome: str = ""
    status: int | None = None
    finished_at: float | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])


def _default_responder(body: dict[str, Any]) -> str:
    # Imported here: the judges package is only needed when the default responder answers.
    from maev_kit.judges import answer_retention_prompt

    return answer_retention_prompt(list(body.get("messages") or []))


def _count_tokens(text: str) -> int:
    # A stable stand-in for a tokenizer: about 4 characters per token, at least one.
    return max(1, (len(text) + 3) // 4)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: tests and benchmarks read the request log instead

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.server.owner._track(self.connection, add=False)

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            pass  # the client gave up (timeout, cancel): not our error

    def _send(self, status: int, body: bytes, *, content_type: str = "application/json",
              extra: Iterable[tuple[str, str]] = (), length: int | None = None) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                 f"Content-Type: {content_type}",
                 f"Content-Length: {len(body) if length is None else length}"]
        lines += [f"{k}: {v}" for k, v in extra]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self._done()  # before the write: a client that has its answer sees the request finished
        self.wfile.write(head + body)  # one write: no Nagle/delayed-ACK stall

    def _done(self) -> None:
        entry = getattr(self, "_entry", None)
        if entry is not None:
            self._entry = None
            entry.finished_at = time.monotonic()
            self.server.owner._leave()

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            body = {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "maev"}]}
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        entry = LoggedRequest(time.monotonic(), self.path, None,
                              {k.lower(): v for k, v in self.headers.items()})
        try:
            entry.body = json.loads(raw) if raw else {}
        except ValueError:
            entry.body = None
        owner._enter(entry)
        self._entry: LoggedRequest | None = entry
        try:
            self._answer(owner, entry)
        finally:
            self._done()

    def _answer(self, owner: FakeOpenAIServer, entry: LoggedRequest) -> None:
        if entry.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            entry.outcome, entry.status = "not_found", 404
            self._send(404, json.dumps({"error": {"message": f"no route {entry.path}"}}).encode())
            return
        if not isinstance(entry.body, dict) or not isinstance(entry.body.get("messages"), list):
            entry.outcome, entry.status = "bad_request", 400
            msg = "request body must be a JSON object with a `messages` list"
            self._send(400, json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode())
            return
        step = owner._next_step(entry.body)
        latency = owner.latency if step.latency is None else step.latency
        if step.kind != "hang" and latency > 0:
            owner._stopping.wait(latency)
        entry.outcome = step.kind
        if step.kind == "hang":
            owner._stopping.wait(step.seconds)
            self.close_connection = True
            entry.status = None
            return
        if step.kind == "error":
            entry.status = step.status
            extra = []
            if step.retry_after is not None:
                extra.append(("Retry-After", step.retry_after))
            if step.retry_after_ms is not None:
                extra.append(("retry-after-ms", step.retry_after_ms))
            kind, code = {429: ("rate_limit_error", "rate_limit_exceeded"),
                          401: ("invalid_request_error", "invalid_api_key")}.get(
                step.status, ("server_error", None))
            body = json.dumps({"error": {"message": step.text, "type": kind, "code": code}})
            self._send(step.status, body.encode(), extra=extra)
            return
        if step.kind == "malformed":
            entry.status = 200
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
            return
        body = self._completion(entry.body, step.text, owner._next_id(), step.finish_reason)
        entry.status = 200
        if step.kind == "truncated":
            self.close_connection = True
            self._send(200, body[: len(body) // 2], length=len(body))
            return
        self._send(200, body)

    @staticmethod
    def _completion(request: dict[str, Any], text: str, n: int,
                    finish_reason: str = "stop") -> bytes:
        prompt = "".join(str(m.get("content") or "") for m in request.get("messages") or []
                         if isinstance(m, dict))
        pt, ct = _count_tokens(prompt), _count_tokens(text)
        return json.dumps({
            "id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()),
            "model": str(request.get("model") or "fake"), "system_fingerprint": "fp_maev_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }).encode()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # the stdlib default (5) drops connects at ~50 concurrent clients
    owner: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


class FakeOpenAIServer:
    """An OpenAI-compatible ``POST /v1/chat/completions`` server on 127.0.0.1, in a thread.

    Replies come from ``responder(request_body)`` (default: the retention prompt answered by the
    heuristic judge, :func:`maev_kit.judges.answer_retention_prompt`), unless steps queued with
    :meth:`script` come first — one per request, in arrival order. A responder may also return a
    :class:`FakeReply` to inject a fault for a given request. Every request is logged
    (:attr:`requests`) and the peak number in flight is kept (:attr:`peak_in_flight`).

    Parameters
    ----------
    responder : callable, optional
        ``responder(body: dict) -> str | FakeReply``.
    fail : str, optional
        Put the whole server in one failure mode, one of :data:`FAIL_MODES` (``"401"``,
        ``"429"``, ``"500"``, ``"timeout"``, ``"garbage"``, ``"prose"``): every request not
        answered by a scripted step gets it. Changeable later through ``.fail``.
    latency : float
        Seconds to wait before each reply (changeable later through ``.latency``).
    host, port : str, int
        Where to listen; port 0 picks a free one.

    Examples
    --------
    >>> from openai import OpenAI
    >>> with FakeOpenAIServer(responder=lambda body: "pong") as server:
    ...     server.script(reply("first"), http_error(503))
    ...     client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    ...     first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    ...     try:
    ...         client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    ...     except Exception as exc:
    ...         failed = type(exc).__name__
    ...     last = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    >>> first.choices[0].message.content, failed, last.choices[0].message.content
    ('first', 'InternalServerError', 'pong')
    >>> [r.outcome for r in server.requests], server.peak_in_flight
    (['reply', 'error', 'reply'], 1)
    """

    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0,
                 host: str = "127.0.0.1", port: int = 0, fail: str | None = None) -> None:
        if latency < 0:
            raise ValueError(f"`latency` must be >= 0 seconds, got {latency!r}")
        if fail is not None:
            fail = str(fail)
            if fail not in FAIL_MODES:
                raise ValueError(f"`fail` must be one of {', '.join(FAIL_MODES)}, got {fail!r}")
        self.fail = fail
        self.responder: Responder = responder or _default_responder
        self.latency = float(latency)
        self.host, self._port = host, int(port)
        self.requests: list[LoggedRequest] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._script: list[FakeReply] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._ids = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        """Bind and serve in a daemon thread; returns ``self``."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((self.host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="maev-fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end hanging requests and close open connections."""
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def serve_until_stopped(self) -> None:
        """Block the calling thread until :meth:`stop` is called (or Ctrl-C)."""
        self.start()
        try:
            while not self._stopping.wait(0.5):
                pass
        finally:
            self.stop()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running: call .start() or use it in a `with` block")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` — pass it as ``base_url`` / ``api_base``."""
        return f"http://{self.host}:{self.port}/v1"

    # -- behaviour -------------------------------------------------------------------------
    def script(self, *steps: FakeReply | str) -> None:
        """Queue replies or faults for the next requests, in arrival order (strings are replies)."""
        with self._lock:
            self._script.extend(reply(s) if isinstance(s, str) else s for s in steps)

    @property
    def pending(self) -> int:
        """Scripted steps not consumed yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the request log, the peak in-flight count and any queued steps."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self.peak_in_flight = self.in_flight

    @property
    def completed(self) -> list[LoggedRequest]:
        """Logged requests answered with a 200 and a complete body."""
        with self._lock:
            return [r for r in self.requests if r.outcome == "reply"]

    # -- internals (called from handler threads) -------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _enter(self, entry: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(entry)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _next_step(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            step = self._script.pop(0) if self._script else None
        if step is not None:
            return step
        if self.fail is not None:
            return _failure(self.fail)
        try:
            out = self.responder(body)
        except Exception as exc:  # a broken responder is reported to the client, not swallowed
            return FakeReply("error", status=500,
                             text=f"responder failed: {type(exc).__name__}: {exc}")
        return out if isinstance(out, FakeReply) else reply(str(out))

