"""Mapping of provider failures to BackendError kinds, and Retry-After parsing."""

from __future__ import annotations

import email.utils
import json
import time

import pytest

from maev_kit.backends import ERROR_KINDS, BackendError, classify_error, retry_after_from_headers


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after-ms": "1500"}, 1.5),
    ({"Retry-After-Ms": "20", "Retry-After": "9"}, 0.02),
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "0"}, 0.0),  # the openai SDK ignores 0; we honour it (retry at once)
    ({"retry-after": "-4"}, 0.0),
    ({"retry-after": "100000"}, 120.0),  # capped
    ({"retry-after": "soon"}, None),
    ({"retry-after-ms": "x", "retry-after": "2"}, 2.0),
    ({}, None),
    (None, None),
])
def test_retry_after_from_headers(headers, expected):
    assert retry_after_from_headers(headers) == expected


def test_retry_after_as_an_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_from_headers({"Retry-After": when}) <= 31


class FakeStatusError(Exception):
    """Shaped like openai.APIStatusError: a status code and an HTTP response with headers."""

    def __init__(self, status, headers=None, text="failed"):
        super().__init__(text)
        self.status_code = status
        self.response = type("R", (), {"headers": headers or {}})()


@pytest.mark.parametrize(("status", "kind", "retryable"), [
    (429, "rate_limit", True), (500, "server", True), (502, "server", True),
    (503, "server", True), (504, "timeout", True), (408, "timeout", True),
    (401, "auth", False), (403, "auth", False), (400, "bad_request", False),
    (404, "bad_request", False),
])
def test_status_codes(status, kind, retryable):
    err = classify_error(FakeStatusError(status, {"retry-after-ms": "250"}))
    assert (err.kind, err.retryable, err.status, err.retry_after) == (kind, retryable, status, 0.25)


def test_litellm_wording_of_an_unreadable_body_is_a_bad_response():
    exc = FakeStatusError(500, text="OpenAIException - Expecting value: line 1 column 51 (char 50)")
    assert classify_error(exc).kind == "bad_response"


def test_missing_credentials_is_an_auth_error_not_a_server_error():
    exc = FakeStatusError(500, text="litellm.InternalServerError: Missing credentials. Please "
                                    "pass an `api_key`")
    err = classify_error(exc)
    assert err.kind == "auth" and not err.retryable and "api_key" in err.message


def test_other_exceptions():
    assert classify_error(json.JSONDecodeError("Expecting value", "<", 0)).kind == "bad_response"
    assert classify_error(ConnectionResetError()).kind == "connection"
    assert classify_error(TimeoutError()).kind == "timeout"
    assert classify_error(ValueError("?")).kind == "other"
    same = BackendError("server", "x")
    assert classify_error(same) is same


def test_backend_error_kinds_are_checked():
    with pytest.raises(ValueError, match="kind"):
        BackendError("flaky", "?")
    assert set(ERROR_KINDS) >= {"rate_limit", "server", "timeout", "connection", "unparseable"}


def raised_from(outer, inner):
    try:
        try:
            raise inner
        except BaseException as low:
            raise outer from low
    except BaseException as high:
        return high


@pytest.mark.parametrize(("inner", "reason"), [
    (ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"), "connection refused"),
    (OSError("All connection attempts failed"), "connection refused"),
    (OSError(-2, "Name or service not known"), "unknown host"),
    (OSError(113, "No route to host"), "no route to host"),
])
def test_the_cause_underneath_decides_unreachable(inner, reason):
    # litellm's wording: a 500 InternalServerError "Connection error." over the real cause
    outer = FakeStatusError(500, text="litellm.InternalServerError: Connection error.")
    err = classify_error(raised_from(outer, inner))
    assert (err.kind, err.cause, err.retryable) == ("unreachable", "unreachable", False)
    assert err.message.startswith(reason)


def test_a_dropped_connection_is_retried_and_counted_as_server():
    err = classify_error(ConnectionResetError(104, "Connection reset by peer"))
    assert (err.kind, err.cause, err.retryable) == ("connection", "server", True)


def test_content_policy_refusals():
    class ContentPolicyViolationError(Exception):
        status_code = 400

    assert classify_error(ContentPolicyViolationError("no")).cause == "content_filter"
    azure = FakeStatusError(400, text="The response was filtered due to the prompt triggering "
                                      "Azure OpenAI's content management policy.")
    assert classify_error(azure).kind == "content_filter"
    plain = FakeStatusError(400, text="Unsupported parameter: 'foo'")
    assert (classify_error(plain).kind, classify_error(plain).cause) == ("bad_request", "other")


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_kind_has_one_of_the_agreed_causes(kind):
    from maev_kit.errors import ERROR_CAUSES

    assert BackendError(kind, "x").cause in ERROR_CAUSES
