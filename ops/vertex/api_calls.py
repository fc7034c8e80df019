"""Retry Vertex calls that failed for a transient reason (HTTP 429 quota, 503 unavailable) with backoff
(`google.api_core.retry.Retry`: truncated exponential backoff with jitter); turn every other failure into one
`VertexApiError` line naming the request and the resource."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, TypeVar

import requests
from google.api_core import exceptions
from google.api_core.retry import Retry, if_exception_type
from google.auth import exceptions as auth_exceptions

from foundation.log_lines import fields
from ops.errors import VertexApiError

log = logging.getLogger(__name__)

T = TypeVar("T")
TRANSIENT = (exceptions.TooManyRequests, exceptions.ServiceUnavailable)
# What a Vertex call can fail with for a reason outside adrank: the API's answer, the client's own retries
# running out (e.g. the server is unreachable), credentials, and the REST transport (connection refused, DNS, TLS).
API_FAILURES = (exceptions.GoogleAPICallError, exceptions.RetryError, auth_exceptions.GoogleAuthError,
                requests.exceptions.RequestException)
HINTS = {
    400: "the request was rejected as invalid",
    401: "the credentials were refused: run `gcloud auth application-default login`",
    403: "permission denied: the caller (Application Default Credentials) needs roles/aiplatform.user on the project",
    404: "not found: check the name, vertex.project and vertex.region",
    409: "it already exists or is being changed",
}


@dataclass(frozen=True)
class Backoff:
    """How a transient failure is retried: at most `attempts` calls, waiting a random time up to
    `initial_seconds`, then up to `multiplier` times more each time (at most `maximum_seconds`), and no new
    attempt once `timeout_seconds` have passed since the first."""

    attempts: int = 6
    initial_seconds: float = 1.0
    maximum_seconds: float = 30.0
    multiplier: float = 2.0
    timeout_seconds: float = 300.0


BACKOFF = Backoff()


def with_backoff(call: Callable[[], T], what: str, backoff: Backoff | None = None) -> T:
    """Run `call`; on 429/503 wait and try again as `backoff` (default `BACKOFF`) says."""
    backoff = backoff or BACKOFF
    attempt = 0

    def on_transient(error: Exception) -> None:
        nonlocal attempt
        attempt += 1
        assert isinstance(error, TRANSIENT)
        if attempt == backoff.attempts:
            raise VertexApiError(describe_api_error(what, error) + f" (after {backoff.attempts} attempts)") from None
        log.warning(f"{what}: {error.code} {type(error).__name__}, retrying with backoff "
                    f"(attempt {attempt}/{backoff.attempts})",
                    extra=fields(request=what, status=error.code, attempt=attempt, attempts=backoff.attempts))

    retrying = Retry(
        predicate=if_exception_type(*TRANSIENT),
        initial=backoff.initial_seconds,
        maximum=backoff.maximum_seconds,
        multiplier=backoff.multiplier,
        timeout=backoff.timeout_seconds,
        on_error=on_transient,
    )
    try:
        return retrying(call)()
    except API_FAILURES as error:
        raise VertexApiError(describe_failure(what, error)) from None


def describe_failure(what: str, error: BaseException) -> str:
    """One line for any of API_FAILURES, naming the request (`what`)."""
    if isinstance(error, exceptions.GoogleAPICallError):
        return describe_api_error(what, error)
    if isinstance(error, exceptions.RetryError):
        return f"{what}: no answer from the Vertex AI API: {_one_line(str(error))}"
    if isinstance(error, auth_exceptions.GoogleAuthError):
        return (f"{what}: no usable Google Cloud credentials ({_one_line(str(error))}); "
                "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS")
    return f"{what}: cannot reach the Vertex AI API: {_one_line(str(error))}"


def describe_api_error(what: str, error: exceptions.GoogleAPICallError) -> str:
    """`<what>: <code> <STATUS>, <hint>: <the server's message>` on one line."""
    hint = HINTS.get(error.code or 0)
    message = _one_line(server_message(error))
    return f"{what}: {error.code} {status_name(error)}" + (f", {hint}" if hint else "") + f": {message}"


def server_message(error: exceptions.GoogleAPICallError) -> str:
    """What the server said, read from the answer itself: the REST error body's `error.message` (the exception's
    own message starts with the request line, which `what` already names), else the body's text; a gRPC error's
    message is the server's."""
    body = _error_body(error)
    if isinstance(body.get("message"), str) and body["message"]:
        return body["message"]
    text = getattr(getattr(error, "response", None), "text", None)
    if isinstance(text, str) and text.strip():
        return text
    return error.message or str(error)


def _error_body(error: exceptions.GoogleAPICallError) -> dict:
    """The REST answer's `error` object (`{"code", "message", "status", ...}`); {} for gRPC or a body that is
    not such JSON."""
    try:
        body = error.response.json()["error"]
    except (AttributeError, KeyError, TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def status_name(error: exceptions.GoogleAPICallError) -> str:
    """The canonical status (NOT_FOUND, PERMISSION_DENIED, ...) from the exception or the REST error body."""
    if error.grpc_status_code is not None:
        return error.grpc_status_code.name
    status = _error_body(error).get("status")
    return str(status) if status else type(error).__name__


def _one_line(text: str) -> str:
    return " ".join(text.split())
