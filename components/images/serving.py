"""The prediction server of the `serving` image: adrank's serving SavedModel on the training TensorFlow.

Vertex AI's prebuilt TensorFlow prediction containers stop at TF 2.15, older than the TensorFlow that
trains and exports the model, so the Model Registry's serving image is built from this repository's
cpu lock instead (Dockerfile target `serving`). It follows Vertex's custom-container contract: Vertex
sets `AIP_HTTP_PORT`, `AIP_HEALTH_ROUTE`, `AIP_PREDICT_ROUTE` and `AIP_STORAGE_URI` (the model
directory; TensorFlow reads `gs://` itself). Requests use TF Serving's JSON row format for the
`serving_default` signature, which takes serialized raw tf.Examples:

    {"instances": [{"b64": "<base64 of a serialized tf.Example>"}, ...]}
    -> {"predictions": [{"<task>": <probability>, ...}, ...]}

Limits (`ServingLimits`, from the environment): a body over ADRANK_MAX_BODY_BYTES is answered 413 before it is
read; more than ADRANK_MAX_INSTANCES instances, 413; a POST without Content-Length, 411; a Content-Length that is
not one non-negative integer, or a chunked body, 400 / 411; a client that has not sent its headers and body within
ADRANK_READ_TIMEOUT_SECONDS, 408; more than ADRANK_MAX_CONNECTIONS connections at once, 503 with Retry-After, so
threads and memory stay bounded. Instances are checked against the signature's parse spec before the model runs
(`serving_schema`): a wrong type is a 400 naming the feature and the type it needs.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from components.images.serving_schema import InstanceError, check_instances, signature_expectations

SIGNATURE = "serving_default"
INPUT = "examples"


class BadRequest(ValueError):
    """A request the server answers with `status` (400 unless said) and this message."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServingLimits:
    """What one request and the server as a whole may take."""

    max_body_bytes: int = 10 * 2**20
    max_instances: int = 1000
    read_timeout_seconds: float = 10.0
    max_connections: int = 64
    max_concurrent_predictions: int = 4  # model calls at once; other requests wait for a slot before TensorFlow

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ServingLimits:
        """ADRANK_MAX_BODY_BYTES, ADRANK_MAX_INSTANCES, ADRANK_READ_TIMEOUT_SECONDS, ADRANK_MAX_CONNECTIONS,
        ADRANK_MAX_CONCURRENT_PREDICTIONS."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable, kind in (("max_body_bytes", "ADRANK_MAX_BODY_BYTES", int),
                                      ("max_instances", "ADRANK_MAX_INSTANCES", int),
                                      ("read_timeout_seconds", "ADRANK_READ_TIMEOUT_SECONDS", float),
                                      ("max_connections", "ADRANK_MAX_CONNECTIONS", int),
                                      ("max_concurrent_predictions", "ADRANK_MAX_CONCURRENT_PREDICTIONS", int)):
            if variable in environ:
                try:
                    value = kind(environ[variable])
                except ValueError:
                    raise ValueError(f"{variable}={environ[variable]!r}: expected a positive number") from None
                if not value > 0:
                    raise ValueError(f"{variable}={environ[variable]!r}: expected a positive number")
                values[field] = value
        return cls(**values)


def serialized_examples(body: bytes, max_instances: int | None = None) -> list[bytes]:
    """The serialized tf.Examples of a `{"instances": [{"b64": ...}]}` request body."""
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadRequest(f"request body is not JSON: {error}") from None
    instances = request.get("instances") if isinstance(request, dict) else None
    if not isinstance(instances, list) or not instances:
        raise BadRequest('request needs a non-empty "instances" list')
    if max_instances is not None and len(instances) > max_instances:
        raise BadRequest(f"{len(instances)} instances, more than the {max_instances} a request may carry "
                         "(ADRANK_MAX_INSTANCES); split the request", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    examples = []
    for index, instance in enumerate(instances):
        if not isinstance(instance, dict) or not isinstance(instance.get("b64"), str):
            raise BadRequest(f'instances[{index}]: expected {{"b64": "<base64 serialized tf.Example>"}}')
        try:
            examples.append(base64.b64decode(instance["b64"], validate=True))
        except binascii.Error as error:
            raise BadRequest(f"instances[{index}].b64: not base64 ({error})") from None
    return examples


class Predictor:
    """The SavedModel's `serving_default` signature: serialized examples → one probability per task."""

    def __init__(self, model_dir: str, max_concurrent: int = 4):
        import threading

        import tensorflow as tf

        self._tf = tf
        self.model_dir = model_dir
        self._loaded = tf.saved_model.load(model_dir)
        if SIGNATURE not in self._loaded.signatures:
            raise ValueError(f"{model_dir}: the SavedModel has no '{SIGNATURE}' signature")
        self._signature = self._loaded.signatures[SIGNATURE]
        self.expectations = signature_expectations(self._signature)
        self._slots = threading.BoundedSemaphore(max_concurrent)  # the rest wait here, not inside TensorFlow

    def predict(self, examples: list[bytes]) -> list[dict[str, float]]:
        try:
            check_instances(examples, self.expectations)
        except InstanceError as error:
            raise BadRequest(str(error)) from None
        try:
            with self._slots:
                outputs = self._signature(**{INPUT: self._tf.constant(examples, dtype=self._tf.string)})
        except (self._tf.errors.InvalidArgumentError, ValueError) as error:
            message = getattr(error, "message", str(error)).strip().splitlines()[0]
            raise BadRequest(f"the model rejected the examples: {message}") from None
        columns = {task: values.numpy().reshape(-1).tolist() for task, values in outputs.items()}
        return [{task: float(values[row]) for task, values in columns.items()} for row in range(len(examples))]


class _SlowClient(Exception):
    """The client did not send its request within the read timeout."""


def content_length(headers) -> int:
    """The body length a POST announces: one non-negative integer (411 when absent, 400 when malformed)."""
    if headers.get("Transfer-Encoding"):
        raise BadRequest("chunked request bodies are not accepted: send Content-Length", HTTPStatus.LENGTH_REQUIRED)
    values = headers.get_all("Content-Length") or []
    if not values:
        raise BadRequest("a POST needs a Content-Length header", HTTPStatus.LENGTH_REQUIRED)
    distinct = {value.strip() for value in values}
    if len(distinct) != 1:
        raise BadRequest(f"conflicting Content-Length headers: {sorted(distinct)}")
    text = distinct.pop()
    if not (text.isascii() and text.isdigit()):
        raise BadRequest(f"Content-Length {text[:40]!r} is not a non-negative integer")
    return int(text)


class BoundedHTTPServer(ThreadingHTTPServer):
    """One thread per connection, at most `limits.max_connections` at once; above that a connection is answered
    503 at once, from the accepting thread, and closed."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, handler, limits: ServingLimits):
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self.rejected_connections = 0
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            self.rejected_connections += 1
            _reject_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _reject_busy(request: socket.socket) -> None:
    body = json.dumps({"error": "the server is at its connection limit (ADRANK_MAX_CONNECTIONS); retry"}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
            "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
    try:
        request.settimeout(1.0)
        request.sendall(head + body)
    except OSError:
        pass


def make_server(predictor: Predictor, port: int, predict_route: str, health_route: str,
                host: str = "0.0.0.0", limits: ServingLimits = ServingLimits()) -> BoundedHTTPServer:

    class Handler(BaseHTTPRequestHandler):
        timeout = limits.read_timeout_seconds  # each read of the request line, headers and body

        def _answer(self, status: HTTPStatus, payload: dict, close: bool = False) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(body)

        def send_error(self, code, message=None, explain=None):
            """http.server's own errors (bad request line, oversized header) as JSON, connection closed."""
            self._answer(HTTPStatus(code), {"error": message or HTTPStatus(code).phrase}, close=True)

        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path == health_route:
                self._answer(HTTPStatus.OK, {"status": "ready", "model": predictor.model_dir})
            else:
                self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path}"})

        def do_POST(self):  # noqa: N802
            if self.path != predict_route:
                self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path}"}, close=True)
                return
            try:
                length = content_length(self.headers)
                if length > limits.max_body_bytes:
                    raise BadRequest(f"request body of {length} bytes is over the limit of {limits.max_body_bytes} "
                                     "(ADRANK_MAX_BODY_BYTES)", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
                body = self._read_body(length)
                predictions = predictor.predict(serialized_examples(body, limits.max_instances))
            except BadRequest as error:
                # the body was not (fully) read: the connection cannot carry another request
                self._answer(error.status, {"error": str(error)}, close=True)
                return
            except _SlowClient:
                self._answer(HTTPStatus.REQUEST_TIMEOUT, {
                    "error": f"the request body did not arrive within {limits.read_timeout_seconds:g} s "
                             "(ADRANK_READ_TIMEOUT_SECONDS)"}, close=True)
                return
            self._answer(HTTPStatus.OK, {"predictions": predictions})

        def _read_body(self, length: int) -> bytes:
            """`length` bytes within the read timeout in total (not per read), so a trickle cannot hold a thread."""
            deadline = time.monotonic() + limits.read_timeout_seconds
            chunks, remaining = [], length
            while remaining > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _SlowClient()
                self.connection.settimeout(left)
                try:
                    chunk = self.rfile.read1(min(remaining, 1 << 16))
                except (TimeoutError, socket.timeout):
                    raise _SlowClient() from None
                if not chunk:
                    raise BadRequest(f"the body ended after {length - remaining} of {length} bytes (Content-Length)")
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks)

        def log_message(self, format, *args):  # one line per request on stderr, as Vertex logs it
            print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)

    return BoundedHTTPServer((host, port), Handler, limits)


def main() -> int:
    model_dir = os.environ.get("AIP_STORAGE_URI")
    if not model_dir:
        print("serving: AIP_STORAGE_URI is not set (Vertex sets it to the model's artifact directory)")
        return 2
    port = int(os.environ.get("AIP_HTTP_PORT", "8080"))
    predict_route = os.environ.get("AIP_PREDICT_ROUTE", "/predict")
    health_route = os.environ.get("AIP_HEALTH_ROUTE", "/health")
    try:
        limits = ServingLimits.from_environment()
    except ValueError as error:
        print(f"serving: {error}")
        return 2
    try:
        predictor = Predictor(model_dir, limits.max_concurrent_predictions)
    except (OSError, ValueError) as error:
        print(f"serving: cannot load the model at AIP_STORAGE_URI={model_dir}: {str(error).strip().splitlines()[0]}")
        return 2
    server = make_server(predictor, port, predict_route, health_route, limits=limits)
    print(f"serving {model_dir} on :{port} (predict {predict_route}, health {health_route}; {limits})", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
