"""What a judge needs from a model server of its own: generation parameters with judge-sized
defaults, local servers reached without a key, and a preflight that asks the server which
models it serves before a run starts.

Standard library only (the preflight is a ``GET /v1/models`` and a ``GET /props`` through
:mod:`urllib`, run in a worker thread): importing this never imports litellm or openai.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["AUTO", "MAX_REPLY_TOKENS", "fold_system", "generation_defaults", "reply_cap",
           "request_params", "response_format", "local_defaults", "PROBE_MESSAGES",
           "probe_kept_system",
           "local_endpoint", "redact_url", "preflight", "PreflightError", "VLLM_SLOTS"]

#: The value of ``max_tokens`` that sizes the reply cap to each request (see :func:`reply_cap`).
AUTO = "auto"
#: The largest reply cap ``max_tokens="auto"`` ever asks for.
MAX_REPLY_TOKENS = 2048
#: litellm prefixes of servers that run on the user's own machine and need no key, with the
#: variable litellm reads for their address and the address they listen on by default.
LOCAL_PREFIXES: dict[str, tuple[str | None, str | None]] = {
    "ollama": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "ollama_chat": ("OLLAMA_API_BASE", "http://localhost:11434"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE", None),
    "lm_studio": ("LM_STUDIO_API_BASE", None),
}
_NO_KEY = "not-needed"  # what a key-less local server is sent (the openai SDK wants a string)
_PREFLIGHT_TIMEOUT = 5.0
#: Requests a vLLM server works on at once unless told otherwise (its ``--max-num-seqs``
#: default): vLLM batches requests continuously, so a judge may send as many as its ceiling.
VLLM_SLOTS = 256
_MAX_SLOTS = 4096  # a larger count announced is not believed


def generation_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with a judge's defaults filled in: ``temperature`` 0 and ``max_tokens``
    ``"auto"`` (a cap sized to each request). ``None`` keeps a parameter unsent (``max_tokens=
    None``: no cap at all).

    >>> generation_defaults({})
    {'temperature': 0, 'max_tokens': 'auto'}
    >>> generation_defaults({"max_tokens": 300, "temperature": None})
    {'max_tokens': 300, 'temperature': None}
    """
    out = dict(params)
    out.setdefault("temperature", 0)
    out.setdefault("max_tokens", AUTO)
    cap = out["max_tokens"]
    if cap is not None and cap != AUTO and (isinstance(cap, bool) or not isinstance(cap, int)
                                            or cap < 1):
        raise ValueError(f"`max_tokens` must be a positive int, 'auto' or None (no cap), "
                         f"got {cap!r}")
    return out


def reply_cap(hint: int | None) -> int:
    """The reply cap ``max_tokens="auto"`` sends: the request's own estimate (``hint``, from
    the task: a base plus a share per fact for a judge), never above :data:`MAX_REPLY_TOKENS`.

    >>> reply_cap(500), reply_cap(None), reply_cap(10_000)
    (500, 2048, 2048)
    """
    if hint is None or hint < 1:
        return MAX_REPLY_TOKENS
    return min(int(hint), MAX_REPLY_TOKENS)


def request_params(params: Mapping[str, Any], max_tokens: int | None = None) -> dict[str, Any]:
    """The parameters one request is sent with: ``"auto"`` becomes :func:`reply_cap` of the
    runner's ``max_tokens`` hint, parameters set to None are left out.

    >>> request_params({"temperature": 0, "max_tokens": "auto"}, max_tokens=350)
    {'temperature': 0, 'max_tokens': 350}
    >>> request_params({"temperature": None, "max_tokens": None})
    {}
    """
    out = {k: v for k, v in params.items() if v is not None and k != "fold_system"}
    if out.get("response_format") == AUTO:
        del out["response_format"]  # sized to each request by the backend: response_format()
    if out.get("max_tokens") == AUTO:
        out["max_tokens"] = reply_cap(max_tokens)
    return out


#: The forms of a structured-output request, in the order tried: OpenAI's ``json_schema``
#: (vLLM, Ollama, LM Studio, llama.cpp's ``llama-server``), then ``json_object`` with a
#: ``schema`` (llama-cpp-python's server, which refuses the first with a 422).
SCHEMA_FORMS = ("json_schema", "json_object")


def response_format(schema: Mapping[str, Any], form: str) -> dict[str, Any]:
    """The ``response_format`` asking a server for replies that match ``schema``, in ``form``
    (one of :data:`SCHEMA_FORMS`); the server turns it into a grammar, so a reply is the JSON
    object and ends where it ends.

    >>> response_format({"type": "object"}, "json_object")
    {'type': 'json_object', 'schema': {'type': 'object'}}
    >>> response_format({"type": "object"}, "json_schema")["json_schema"]["name"]
    'judge_reply'
    """
    if form == "json_object":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_schema",
            "json_schema": {"name": "judge_reply", "schema": dict(schema), "strict": True}}


def local_defaults(model: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the defaults of a server of the user's own (see :func:`local_endpoint`):
    ``response_format="auto"`` (each reply held to the judge's JSON schema, where the server
    supports structured output) and ``fold_system="auto"`` (a probe before the run tells
    whether the chat template keeps the system message). A hosted model gets neither. Set
    either to None (``response_format``) or False (``fold_system``) to turn it off.

    >>> local_defaults("openai/m", {"api_base": "http://127.0.0.1:8080/v1"})["response_format"]
    'auto'
    >>> "fold_system" in local_defaults("gpt-4o-mini", {})
    False
    """
    out = dict(params)
    if local_endpoint(model, out)[1]:
        out.setdefault("response_format", AUTO)
        out.setdefault("fold_system", AUTO)
    return out


#: The probe for a chat template that drops the system message: a code word given only in
#: the system message, asked for in the user message. A template that drops the system
#: message leaves the model nothing to echo.
PROBE_WORD = "ZEBRA-4721"
PROBE_MESSAGES = (
    {"role": "system", "content": f"The password is {PROBE_WORD}. When asked for the password, "
                                  "reply with the password only."},
    {"role": "user", "content": "What is the password? Reply with the password only."},
)


def probe_kept_system(reply: str) -> bool:
    """Whether a reply to :data:`PROBE_MESSAGES` shows the system message reached the model.

    >>> probe_kept_system("ZEBRA-4721"), probe_kept_system("I do not know the password.")
    (True, False)
    """
    return "4721" in (reply or "")


def fold_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r"""The messages with every system message folded into the first user message (the
    judge's rules first), for chat templates that drop system messages (Gemma's, for one):
    the backend parameter ``fold_system=True`` (``--fold-system``).

    >>> fold_system([{"role": "system", "content": "Rules."},
    ...              {"role": "user", "content": "Facts."}])
    [{'role': 'user', 'content': 'Rules.\n\nFacts.'}]
    """
    rules = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not rules:
        return rest
    for m in rest:
        if m.get("role") == "user":
            m["content"] = "\n\n".join([*rules, str(m.get("content") or "")])
            return rest
    return [{"role": "user", "content": "\n\n".join(rules)}, *rest]


def redact_url(url: str) -> str:
    """``url`` without a password or user (safe to print).

    >>> redact_url("http://bob:s3cret@10.0.0.5:8080/v1")
    'http://10.0.0.5:8080/v1'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def local_endpoint(model: str, params: Mapping[str, Any]) -> tuple[str | None, bool]:
    """Where a litellm model string goes when it is not a hosted provider: ``(base URL, local)``.

    ``local`` is True for an address the user gave (``api_base``), ``OPENAI_BASE_URL`` for an
    ``openai/`` or bare model string, and litellm's local prefixes (``ollama/``,
    ``hosted_vllm/``, ``lm_studio/``): those need no key.

    >>> local_endpoint("ollama/llama3.1", {})
    ('http://localhost:11434', True)
    >>> local_endpoint("openai/x", {"api_base": "http://127.0.0.1:8080/v1"})
    ('http://127.0.0.1:8080/v1', True)
    """
    base = params.get("api_base") or params.get("base_url")
    if base:
        return str(base), True
    prefix = model.split("/", 1)[0].lower() if "/" in model else ""
    if prefix in LOCAL_PREFIXES:
        var, default = LOCAL_PREFIXES[prefix]
        return (os.environ.get(var) if var else None) or default, True
    if prefix in ("", "openai") and os.environ.get("OPENAI_BASE_URL"):
        return os.environ["OPENAI_BASE_URL"], True
    return None, False


def keyless_params(model: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` plus a placeholder ``api_key`` when the model is served locally and no key is
    set anywhere (the openai SDK under litellm refuses to send a request without one).

    >>> keyless_params("hosted_vllm/m", {"api_base": "http://h:8000/v1"})["api_key"]
    'not-needed'
    """
    out = dict(params)
    if out.get("api_key"):
        return out
    _, local = local_endpoint(model, out)
    prefix = model.split("/", 1)[0].lower() if "/" in model else "openai"
    var = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY",
           "lm_studio": "LM_STUDIO_API_KEY"}.get(prefix)
    if local and prefix not in ("ollama", "ollama_chat") and not (var and os.environ.get(var)):
        out["api_key"] = _NO_KEY
    return out


class PreflightError(Exception):
    """What the preflight found wrong: ``cause`` (``unreachable``, ``auth`` or ``other``) and a
    message naming the server's address."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


def _served(body: Any) -> list[str]:
    """Model ids from an OpenAI ``/v1/models`` body or an Ollama ``/api/tags`` body."""
    if not isinstance(body, dict):
        return []
    rows = body.get("data") if isinstance(body.get("data"), list) else body.get("models")
    out = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict):
            name = row.get("id") or row.get("name") or row.get("model")
            if isinstance(name, str):
                out.append(name)
    return out


def _same_model(asked: str, served: str) -> bool:
    """Whether ``served`` (an id the server lists) is the model ``asked`` names: equal, or
    equal after dropping a path or an Ollama ``:latest`` tag, ignoring case."""
    def norm(s: str) -> str:
        s = s.strip().lower().rsplit("/", 1)[-1]
        return s[:-len(":latest")] if s.endswith(":latest") else s
    return asked.strip().lower() == served.strip().lower() or norm(asked) == norm(served)


def preflight(model: str, base: str, api_key: str | None = None,
              timeout: float = _PREFLIGHT_TIMEOUT) -> tuple[list[str] | None, int | None]:
    """Ask the server at ``base`` which models it serves, check ``model`` (the name without
    litellm's prefix) is one, and how many requests it works on at once: ``(served, slots)``.

    ``served`` is the ids it serves, or None when it cannot tell (no ``/v1/models``, an empty
    list, no answer within ``timeout`` — a busy one-slot server). ``slots`` is what the server
    says of its parallelism, or None when it does not say: llama.cpp's server at ``GET /props``
    (``total_slots``, its ``--parallel``); a vLLM server lists its models as ``owned_by:
    "vllm"`` and batches up to :data:`VLLM_SLOTS` requests; Ollama, LM Studio and
    llama-cpp-python's server do not say. The answer is untrusted: anything but a whole number
    from 1 to 4,096 is ignored. The runner opens its window at ``slots`` instead of probing
    (see :func:`~maev_kit.runner.internal.opening`). ``/props`` is asked only of a server that
    answered, so a silent or busy one costs one timeout at most.

    Raises :class:`PreflightError` when nothing listens, when the key is refused, or when the
    server lists its models and ``model`` is not among them.

    >>> preflight("m", "http://127.0.0.1:9/v1", timeout=0.5)
    Traceback (most recent call last):
    ...
    maev_kit.backends._local.PreflightError: nothing answers at http://127.0.0.1:9/v1 for model m (connection refused)
    """
    where = redact_url(base.rstrip("/"))
    root = base.rstrip("/").removesuffix("/v1")
    urls = [base.rstrip("/") + "/models"]
    if ":11434" in base or "ollama" in base:
        urls.append(root + "/api/tags")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    for url in urls:
        try:
            body = _get_json(url, headers, timeout)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise PreflightError(f"authentication failed at {where} for model {model} "
                                     f"({exc.code}, asked which models it serves)",
                                     "auth") from None
            continue
        except urllib.error.URLError as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, ConnectionRefusedError) or "refused" in str(reason).lower():
                raise PreflightError(f"nothing answers at {where} for model {model} "
                                     "(connection refused)", "unreachable") from None
            return None, None  # a timeout, a DNS hiccup: the run itself will tell
        except (OSError, ValueError):
            return None, None
        served = _served(body)
        if not served:
            continue
        if not any(_same_model(model, s) for s in served):
            shown = ", ".join(served[:10]) + (f" (and {len(served) - 10} more)"
                                              if len(served) > 10 else "")
            raise PreflightError(f"{model} is not served at {where}; the server serves: "
                                 f"{shown}", "other")
        return served, _slots(root, headers, timeout, body)
    return None, None


def _get_json(url: str, headers: Mapping[str, str], timeout: float) -> Any:
    """The JSON body of ``GET url`` (at most 1 MB; an empty body is None). Raises what
    :func:`urllib.request.urlopen` raises, and ValueError for a body that is not JSON."""
    req = urllib.request.Request(url, headers=dict(headers))
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user's URL
        return json.loads(resp.read(1_000_000) or b"null")


def _slots(root: str, headers: Mapping[str, str], timeout: float, models: Any) -> int | None:
    """What a server that listed its models (``models``: the body) says of its parallelism:
    ``total_slots`` at ``root/props``, else :data:`VLLM_SLOTS` for vLLM's model list."""
    try:
        props = _get_json(root + "/props", headers, timeout)
    except (OSError, ValueError):
        props = None
    total = props.get("total_slots") if isinstance(props, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and 1 <= total <= _MAX_SLOTS:
        return total
    rows = models.get("data") if isinstance(models, dict) else None
    if isinstance(rows, list) and any(isinstance(r, dict) and r.get("owned_by") == "vllm"
                                      for r in rows):
        return VLLM_SLOTS
    return None
