"""A local OpenAI-compatible chat-completions server for tests, benchmarks and demos.

Standard library only. One thread per connection (``ThreadingHTTPServer``), HTTP/1.1
keep-alive, headers and body sent in one write with Nagle disabled (else a delayed ACK costs
~60 ms per call), a listen backlog large enough for hundreds of concurrent connects, and quiet
about clients that hang up (a client timing out is not a server error).
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Union, cast

__all__ = [
    "FAIL_MODES",
    "FakeBatch",
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


@dataclass
class FakeBatch:
    """One batch as the server saw it (``FakeOpenAIServer.batches``): its id, the ``custom_id``
    of every line in its input file, in file order, and what became of it."""

    id: str
    input_file_id: str
    custom_ids: list[str]
    lines: list[dict[str, Any]]
    created: int
    started_at: float
    fate: Literal["complete", "expire", "fail"] = "complete"
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    endpoint: str = "/v1/chat/completions"
    completion_window: str = "24h"
    metadata: dict[str, Any] | None = None
    finished: int | None = None

    def to_json(self) -> dict[str, Any]:
        terminal = self.status in ("completed", "failed", "expired", "cancelled")
        errors = None
        if self.status == "failed":
            errors = {"object": "list", "data": [{"code": "injected_failure", "line": None,
                                                  "param": None,
                                                  "message": "the batch failed (injected)"}]}
        stamp = {"completed": "completed_at", "failed": "failed_at", "expired": "expired_at",
                 "cancelled": "cancelled_at"}.get(self.status)
        out = {"id": self.id, "object": "batch", "endpoint": self.endpoint, "errors": errors,
               "input_file_id": self.input_file_id,
               "completion_window": self.completion_window, "status": self.status,
               "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
               "created_at": self.created, "in_progress_at": None,
               "expires_at": self.created + 86400, "finalizing_at": None,
               "completed_at": None, "failed_at": None, "expired_at": None,
               "cancelling_at": None, "cancelled_at": None,
               "request_counts": {"total": len(self.custom_ids),
                                  "completed": self.completed if terminal else 0,
                                  "failed": self.failed if terminal else 0},
               "metadata": self.metadata}
        if stamp:
            out[stamp] = self.finished
        return out


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename, bytes)."""
    from email import policy
    from email.parser import BytesParser

    msg = BytesParser(policy=policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode("latin-1") + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not msg.is_multipart():
        return fields
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = cast("bytes | None", part.get_payload(decode=True))  # decode=True: bytes
            fields[str(name)] = (part.get_filename(), payload or b"")
    return fields


def _injected_line_failure(batch_id: str, custom_id: str, rate: float) -> bool:
    """Whether line ``custom_id`` of ``batch_id`` fails under ``rate``: a stable draw per
    (batch, line), so the same line sent again in a new batch draws again."""
    if rate <= 0:
        return False
    digest = hashlib.sha256(f"{batch_id}\0{custom_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer
    _entry: LoggedRequest | None  # the request being answered (set in do_POST)

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
        path = self.path.split("?", 1)[0].rstrip("/")
        owner = self.server.owner
        if path in ("/v1/models", "/models"):
            body = {"object": "list", "data": [{"id": m, "object": "model",
                                                "owned_by": owner.owned_by}
                                               for m in owner.models or ()]}
            self._send(200, json.dumps(body).encode())
        elif path == "/props" and owner.props is not None:
            self._send(200, json.dumps(owner.props).encode())
        elif path.startswith(("/v1/files/", "/v1/batches/")):
            self._batch_route("GET", path, b"")
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
        if isinstance(entry.body, dict) and _is_probe(entry.body):
            owner.probes.append(entry)  # the kit's system-message probe: not in .requests
            entry.status = 200
            self._send(200, self._completion(entry.body, owner._probe_reply(entry.body),
                                             owner._next_id()))
            return
        owner._enter(entry)
        self._entry = entry
        try:
            path = entry.path.split("?", 1)[0].rstrip("/")
            if path.startswith(("/v1/files", "/v1/batches")):
                entry.outcome = "batch_api"
                self._batch_route("POST", path, raw)
            else:
                self._answer(owner, entry)
        finally:
            self._done()

    # -- files and batches ----------------------------------------------------------------
    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        entry = getattr(self, "_entry", None)
        if entry is not None:
            entry.status = status
        self._send(status, json.dumps({"error": {"message": message, "type": kind,
                                                 "code": None}}).encode())

    def _ok(self, obj: dict[str, Any]) -> None:
        entry = getattr(self, "_entry", None)
        if entry is not None:
            entry.status = 200
        self._send(200, json.dumps(obj).encode())

    def _batch_route(self, method: str, path: str, raw: bytes) -> None:
        data: bytes | None
        batch: FakeBatch | None
        owner = self.server.owner
        if owner.fail in ("401", "429", "500"):
            step = _failure(owner.fail)
            self._error(step.status, step.text, "invalid_request_error" if step.status == 401
                        else "server_error")
            return
        parts = path.split("/")[2:]  # after "/v1"
        if method == "POST" and parts == ["files"]:
            fields = _multipart(self.headers.get("Content-Type") or "", raw)
            if "file" not in fields:
                self._error(400, "expected multipart/form-data with a `file` field")
                return
            filename, data = fields["file"]
            purpose = fields.get("purpose", (None, b"batch"))[1].decode() or "batch"
            self._ok(owner._store_file(data, filename or "input.jsonl", purpose))
        elif method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
            data = owner._file(parts[1])
            if data is None:
                self._error(404, f"no file {parts[1]!r}")
                return
            entry = getattr(self, "_entry", None)
            if entry is not None:
                entry.status = 200
            self._send(200, data, content_type="application/octet-stream")
        elif method == "GET" and len(parts) == 2 and parts[0] == "files":
            meta = owner._file_meta(parts[1])
            if meta is None:
                self._error(404, f"no file {parts[1]!r}")
            else:
                self._ok(meta)
        elif method == "POST" and parts == ["batches"]:
            try:
                request = json.loads(raw or b"{}")
                batch = owner._create_batch(request)
            except (ValueError, KeyError, TypeError) as exc:
                self._error(400, str(exc))
                return
            self._ok(batch.to_json())
        elif parts[:1] == ["batches"] and len(parts) in (2, 3):
            batch = owner._batch(parts[1])
            if batch is None:
                self._error(404, f"no batch {parts[1]!r}")
            elif method == "POST" and parts[2:] == ["cancel"]:
                self._ok(owner._cancel_batch(batch).to_json())
            elif method == "GET" and len(parts) == 2:
                self._ok(owner._advance_batch(batch).to_json())
            else:
                self._error(404, f"no route {method} {path}")
        else:
            self._error(404, f"no route {method} {path}")

    def _answer(self, owner: FakeOpenAIServer, entry: LoggedRequest) -> None:
        body: str | bytes
        if entry.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            entry.outcome, entry.status = "not_found", 404
            self._send(404, json.dumps({"error": {"message": f"no route {entry.path}"}}).encode())
            return
        if not isinstance(entry.body, dict) or not isinstance(entry.body.get("messages"), list):
            entry.outcome, entry.status = "bad_request", 400
            msg = "request body must be a JSON object with a `messages` list"
            self._send(400, json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode())
            return
        model = str(entry.body.get("model") or "")
        if owner.models is not None and model not in owner.models:
            entry.outcome, entry.status = "model_not_found", 404
            msg = f"The model `{model}` does not exist or you do not have access to it."
            self._send(404, json.dumps({"error": {"message": msg, "type": "invalid_request_error",
                                                  "code": "model_not_found"}}).encode())
            return
        refused = owner._refused_format(entry.body)
        if refused is not None:
            entry.outcome, entry.status = "bad_request", 422
            self._send(422, json.dumps({"error": {"message": refused,
                                                  "type": "invalid_request_error"}}).encode())
            return
        with owner._slot():  # one-slot mode: wait here, in the queue, like llama.cpp's server
            if owner.slots is not None and self._client_gone():
                entry.outcome = "abandoned"  # the client left while queued: no work done
                self.close_connection = True
                return
            step = owner._next_step(owner._seen(entry.body))
            if _schema_of(entry.body) is None:  # a grammar ends the reply with its object
                step = owner._rambling(step, entry.body)
            latency = owner.latency if step.latency is None else step.latency
            latency += owner.seconds_per_token * _count_tokens(step.text)
            if step.kind != "hang" and latency > 0 and not self._work(owner, latency):
                entry.outcome = "abandoned"  # the client left mid-work: the rest is not done
                self.close_connection = True
                return
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

    def _client_gone(self) -> bool:
        """Whether the client closed its connection (a readable socket with nothing to read)."""
        import select

        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _work(self, owner: FakeOpenAIServer, seconds: float) -> bool:
        """Spend ``seconds`` on a reply; in one-slot mode stop early (False) when the client
        leaves, as a server that notices a closed connection does. A server stopped meanwhile
        goes away without the reply (False)."""
        start = time.monotonic()
        end = start + seconds
        try:
            while True:
                if owner._stopping.is_set():
                    return False
                left = end - time.monotonic()
                if left <= 0:
                    return True
                if owner.slots is not None and self._client_gone():
                    return False
                owner._stopping.wait(min(left, 0.01 if owner.slots is not None else left))
        finally:
            owner._busy(time.monotonic() - start)

    @staticmethod
    def _completion(request: dict[str, Any], text: str, n: int,
                    finish_reason: str = "stop") -> bytes:
        return json.dumps(_completion_object(request, text, n, finish_reason)).encode()


def _completion_object(request: dict[str, Any], text: str, n: int,
                       finish_reason: str = "stop") -> dict[str, Any]:
    prompt = "".join(str(m.get("content") or "") for m in request.get("messages") or []
                     if isinstance(m, dict))
    pt, ct = _count_tokens(prompt), _count_tokens(text)
    return {
        "id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()),
        "model": str(request.get("model") or "fake"), "system_fingerprint": "fp_maev_fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
    }


def _schema_of(body: dict[str, Any]) -> Any:
    """The JSON schema a request's ``response_format`` holds its reply to, or None: OpenAI's
    ``{"type": "json_schema", "json_schema": {"schema": ...}}`` or llama.cpp's
    ``{"type": "json_object", "schema": ...}``."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        return fmt["json_schema"].get("schema")
    return fmt.get("schema") if fmt.get("type") == "json_object" else None


def _is_probe(body: dict[str, Any]) -> bool:
    """Whether a chat request is the kit's system-message probe (see
    :data:`maev_kit.backends._local.PROBE_MESSAGES`)."""
    from maev_kit.backends.internal import PROBE_MESSAGES

    messages = body.get("messages")
    return isinstance(messages, list) and bool(messages) and isinstance(messages[-1], dict) \
        and messages[-1].get("content") == PROBE_MESSAGES[-1]["content"]


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

    It also speaks the provider batch API: ``POST /v1/files`` (multipart upload),
    ``GET /v1/files/{id}`` and ``/v1/files/{id}/content``, ``POST /v1/batches``,
    ``GET /v1/batches/{id}`` and ``POST /v1/batches/{id}/cancel``. A batch is ``validating``,
    then ``in_progress``, and ends ``batch_delay`` seconds after it was created (at the first
    poll after that): each line of its input file is answered by the same script and responder
    as a chat completion, into the output file (``{"custom_id", "response": {"status_code",
    "body"}}``) or the error file. Every batch is recorded in :attr:`batches`
    (:class:`FakeBatch`: id, ``custom_ids`` in file order, status).

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
    batch_delay : float
        Seconds from creating a batch to its end.
    batch_fail_rate : float
        Share of batch lines that fail (into the error file), drawn per batch and line, so a
        line sent again in a new batch draws again; 1.0 fails every line every time.
    batch_fail_ids : iterable of str
        ``custom_id`` values that fail once each: the first batch holding one fails it.
    batch_expire : int
        The next this many batches expire: ``status "expired"``, the first half of their lines
        answered, the rest in the error file with code ``batch_expired``.
    batch_fail : int
        The next this many batches fail outright: ``status "failed"``, no output.

    slots : int, optional
        Requests worked on at once; the others wait in a queue, as on llama.cpp's server
        (``slots=1``: one at a time). A request whose client hangs up while it waits is dropped
        (outcome ``abandoned``), and one whose client hangs up mid-work stops. ``busy_time``
        adds up the seconds spent working on requests.
    models : iterable of str, optional
        The model names served: listed at ``GET /v1/models``, and a chat request for another
        name gets a 404 ``model_not_found`` (default: any name, an empty list).
    seconds_per_token : float
        Seconds of work per completion token (on top of ``latency``), like a model generating.
    ramble : int
        Replies go on after their answer up to this many tokens, or the request's
        ``max_tokens`` (then ``finish_reason`` is ``length``), like a small model that does
        not stop — unless the request's ``response_format`` holds a JSON schema: then, as a
        server that turns it into a grammar, the reply ends with its JSON object.
    drop_system : bool
        The responder never sees system messages, like a chat template that drops them
        (Gemma's). The kit's system-message probe (a code word given only in the system
        message) is answered by the server itself — with the word only when the system
        message is kept — and logged in :attr:`probes`, not :attr:`requests`.
    props : mapping, optional
        The body of ``GET /props`` (none by default: a 404), as llama.cpp's server tells its
        settings there: ``props={"total_slots": 4}`` says four requests are worked on at once.
    owned_by : str
        The ``owned_by`` of each model at ``GET /v1/models`` (``"vllm"`` as a vLLM server).
    response_formats : iterable of str
        The ``response_format`` types accepted besides ``text`` (default ``json_schema`` and
        ``json_object``); another gets a 422 naming ``response_format``, as llama-cpp-python's
        server does for ``json_schema``.

    The batch settings are attributes too (``server.batch_expire = 1``), changeable any time.

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
                 host: str = "127.0.0.1", port: int = 0, fail: str | None = None,
                 batch_delay: float = 1.0, batch_fail_rate: float = 0.0,
                 batch_fail_ids: Iterable[str] = (), batch_expire: int = 0,
                 batch_fail: int = 0, slots: int | None = None,
                 models: Iterable[str] | None = None, seconds_per_token: float = 0.0,
                 ramble: int = 0, drop_system: bool = False,
                 response_formats: Iterable[str] = ("json_schema", "json_object"),
                 props: Mapping[str, Any] | None = None, owned_by: str = "maev") -> None:
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int)
                                  or slots < 1):
            raise ValueError(f"`slots` must be None (no limit) or a count >= 1, got {slots!r}")
        if not seconds_per_token >= 0 or isinstance(ramble, bool) or ramble < 0:
            raise ValueError("`seconds_per_token` and `ramble` must be >= 0")
        self.slots = slots
        self._slots = threading.BoundedSemaphore(slots) if slots is not None else None
        self.models: tuple[str, ...] | None = None if models is None else tuple(models)
        self.seconds_per_token = float(seconds_per_token)
        self.ramble = int(ramble)
        self.drop_system = bool(drop_system)
        self.response_formats = tuple(response_formats)
        self.props = None if props is None else dict(props)
        self.owned_by = str(owned_by)
        self.probes: list[LoggedRequest] = []
        self.busy_time = 0.0
        if latency < 0:
            raise ValueError(f"`latency` must be >= 0 seconds, got {latency!r}")
        if not batch_delay >= 0:
            raise ValueError(f"`batch_delay` must be >= 0 seconds, got {batch_delay!r}")
        if not 0.0 <= batch_fail_rate <= 1.0:
            raise ValueError(f"`batch_fail_rate` must be between 0 and 1, got {batch_fail_rate!r}")
        for name, value in (("batch_expire", batch_expire), ("batch_fail", batch_fail)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"`{name}` must be a count of batches >= 0, got {value!r}")
        self.batch_delay = float(batch_delay)
        self.batch_fail_rate = float(batch_fail_rate)
        self.batch_fail_ids: set[str] = set(batch_fail_ids)
        self.batch_expire = batch_expire
        self.batch_fail = batch_fail
        self.batches: list[FakeBatch] = []
        self._files: dict[str, dict[str, Any]] = {}
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
        """Forget the request log (and the probes), the peak in-flight count, the busy time
        and any queued steps."""
        with self._lock:
            self.requests.clear()
            self.probes.clear()
            self._script.clear()
            self.busy_time = 0.0
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

    def _slot(self) -> Any:
        """A context holding one of the server's slots (waiting for one), or nothing."""
        import contextlib

        return self._slots if self._slots is not None else contextlib.nullcontext()

    def _busy(self, seconds: float) -> None:
        with self._lock:
            self.busy_time += seconds

    def _rambling(self, step: FakeReply, body: dict[str, Any]) -> FakeReply:
        """With ``ramble``: a reply that goes on after its answer, like a small model that does
        not stop, until ``ramble`` tokens or the request's ``max_tokens`` (finish_reason
        ``length`` when cut)."""
        if not self.ramble or step.kind != "reply":
            return step
        cap = body.get("max_tokens")
        limit = self.ramble if not isinstance(cap, int) or cap < 1 else min(cap, self.ramble)
        filler = " Furthermore, to elaborate on the facts above" * (limit * 4 // 44 + 1)
        text = (step.text + filler)[: limit * 4]
        return FakeReply("reply", text=text, latency=step.latency,
                         finish_reason="length" if len(step.text + filler) > len(text)
                         else step.finish_reason)

    def _seen(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as the model sees it: without system messages under ``drop_system``."""
        if not self.drop_system:
            return body
        return {**body, "messages": [m for m in body.get("messages") or []
                                     if not (isinstance(m, dict) and m.get("role") == "system")]}

    def _probe_reply(self, body: dict[str, Any]) -> str:
        """The answer to the kit's system-message probe: the code word, when the system
        message that holds it reaches the model."""
        from maev_kit.backends.internal import PROBE_WORD

        seen = " ".join(str(m.get("content") or "") for m in self._seen(body)["messages"]
                        if isinstance(m, dict))
        return PROBE_WORD if PROBE_WORD in seen else "I do not know the password."

    def _refused_format(self, body: dict[str, Any]) -> str | None:
        """The 422 message for a ``response_format`` type this server does not take."""
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind is None or kind == "text" or kind in self.response_formats:
            return None
        return (f"1 validation error: body.response_format.type: Input should be 'text' or "
                f"{' or '.join(repr(f) for f in self.response_formats)}, got {kind!r}")

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    # -- files and batches (called from handler threads) -----------------------------------
    def _store_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        with self._lock:
            self._ids += 1
            file_id = f"file-fake-{self._ids}"
            meta = {"id": file_id, "object": "file", "bytes": len(data),
                    "created_at": int(time.time()), "filename": filename, "purpose": purpose,
                    "status": "processed", "status_details": None}
            self._files[file_id] = {"meta": meta, "data": bytes(data)}
        return dict(meta)

    def _file(self, file_id: str) -> bytes | None:
        with self._lock:
            f = self._files.get(file_id)
        return None if f is None else f["data"]

    def _file_meta(self, file_id: str) -> dict[str, Any] | None:
        with self._lock:
            f = self._files.get(file_id)
        return None if f is None else dict(f["meta"])

    def _batch(self, batch_id: str) -> FakeBatch | None:
        with self._lock:
            return next((b for b in self.batches if b.id == batch_id), None)

    def _create_batch(self, request: dict[str, Any]) -> FakeBatch:
        if not isinstance(request, dict):
            raise ValueError("the request body must be a JSON object")
        endpoint = request.get("endpoint")
        if endpoint != "/v1/chat/completions":
            raise ValueError(f"`endpoint` must be '/v1/chat/completions', got {endpoint!r}")
        data = self._file(str(request.get("input_file_id")))
        if data is None:
            raise ValueError(f"no input file {request.get('input_file_id')!r}")
        lines: list[dict[str, Any]] = []
        for n, text in enumerate(data.decode("utf-8").splitlines(), 1):
            if not text.strip():
                continue
            line = json.loads(text)
            if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str) \
                    or not isinstance(line.get("body"), dict):
                raise ValueError(f"input file line {n}: needs a string `custom_id` and a "
                                 "`body` object")
            lines.append(line)
        ids = [line["custom_id"] for line in lines]
        if len(set(ids)) != len(ids):
            raise ValueError("input file: every `custom_id` must be unique")
        with self._lock:
            self._ids += 1
            fate: Literal["complete", "expire", "fail"] = "complete"
            if self.batch_fail > 0:
                self.batch_fail -= 1
                fate = "fail"
            elif self.batch_expire > 0:
                self.batch_expire -= 1
                fate = "expire"
            batch = FakeBatch(f"batch_fake_{self._ids}", str(request["input_file_id"]), ids,
                              lines, int(time.time()), time.monotonic(), fate,
                              completion_window=str(request.get("completion_window") or "24h"),
                              metadata=request.get("metadata"))
            self.batches.append(batch)
        return batch

    def _cancel_batch(self, batch: FakeBatch) -> FakeBatch:
        with self._lock:
            if batch.status in ("validating", "in_progress"):
                batch.status, batch.finished = "cancelled", int(time.time())
        return batch

    def _advance_batch(self, batch: FakeBatch) -> FakeBatch:
        """Move ``batch`` along its clock: validating, in progress, then its end (answered once)."""
        elapsed = time.monotonic() - batch.started_at
        with self._lock:
            if batch.status not in ("validating", "in_progress"):
                return batch
            if elapsed < self.batch_delay / 2:
                return batch
            if elapsed < self.batch_delay:
                batch.status = "in_progress"
                return batch
            batch.status = "finalizing"  # claimed: other pollers see it and wait
        self._finish_batch(batch)
        return batch

    def _finish_batch(self, batch: FakeBatch) -> None:
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        if batch.fate != "fail":
            answered = len(batch.lines) // 2 if batch.fate == "expire" else len(batch.lines)
            for k, line in enumerate(batch.lines):
                cid = line["custom_id"]
                if k >= answered:
                    errors.append(self._error_line(cid, "batch_expired", "This request could "
                                                   "not be executed before the completion "
                                                   "window expired."))
                    continue
                with self._lock:
                    injected = cid in self.batch_fail_ids
                    self.batch_fail_ids.discard(cid)
                if injected or _injected_line_failure(batch.id, cid, self.batch_fail_rate):
                    errors.append(self._error_line(cid, "server_error", "injected line failure"))
                    continue
                self._answer_line(line, out, errors)
        out_id = err_id = None
        if out:
            out_id = self._store_file("".join(json.dumps(x) + "\n" for x in out).encode(),
                                      "output.jsonl", "batch_output")["id"]
        if errors:
            err_id = self._store_file("".join(json.dumps(x) + "\n" for x in errors).encode(),
                                      "errors.jsonl", "batch_output")["id"]
        with self._lock:
            batch.output_file_id, batch.error_file_id = out_id, err_id
            batch.completed, batch.failed = len(out), len(errors)
            if batch.fate == "fail":
                batch.failed = len(batch.lines)
            batch.status = {"complete": "completed", "expire": "expired",
                            "fail": "failed"}[batch.fate]
            batch.finished = int(time.time())

    def _error_line(self, custom_id: str, code: str, message: str) -> dict[str, Any]:
        return {"id": f"batch_req_{self._next_id()}", "custom_id": custom_id, "response": None,
                "error": {"code": code, "message": message}}

    def _answer_line(self, line: dict[str, Any], out: list[dict[str, Any]],
                     errors: list[dict[str, Any]]) -> None:
        """One line through the script / responder, as a chat completion would be answered."""
        cid, body = line["custom_id"], line["body"]
        if not isinstance(body.get("messages"), list):
            errors.append(self._error_line(cid, "invalid_request",
                                           "body must have a `messages` list"))
            return
        step = self._next_step(body)
        if step.kind == "hang":
            return  # never answered: the line is in neither file
        if step.kind in ("truncated", "malformed"):
            errors.append(self._error_line(cid, "server_error", "the model's reply was lost"))
            return
        n = self._next_id()
        if step.kind == "error":
            kind = {429: "rate_limit_error", 401: "invalid_request_error"}.get(step.status,
                                                                             "server_error")
            errors.append({"id": f"batch_req_{n}", "custom_id": cid, "error": None,
                           "response": {"status_code": step.status, "request_id": f"req_{n}",
                                        "body": {"error": {"message": step.text, "type": kind,
                                                           "code": None}}}})
            return
        out.append({"id": f"batch_req_{n}", "custom_id": cid, "error": None,
                    "response": {"status_code": 200, "request_id": f"req_{n}",
                                 "body": _completion_object(body, step.text, n,
                                                            step.finish_reason)}})

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

