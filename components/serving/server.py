"""The prediction server of the `serving` image: adrank's serving SavedModel on the training TensorFlow
(`python -m components.serving.server`).

Vertex AI's prebuilt TensorFlow prediction containers stop at TF 2.15, older than the TensorFlow that
trains and exports the model, so the Model Registry's serving image is built from this repository's
cpu lock instead (Dockerfile target `serving`). It follows Vertex's custom-container contract: Vertex
sets `AIP_HTTP_PORT`, `AIP_HEALTH_ROUTE`, `AIP_PREDICT_ROUTE` and `AIP_STORAGE_URI` (the model
directory; TensorFlow reads `gs://` itself). Requests use TF Serving's JSON row format (`request`):

    POST <predict route> {"instances": [{"b64": "<base64 of a serialized tf.Example>"}, ...]}
    -> {"predictions": [{"<task>": <probability>, ...}, ...]}
    GET <health route>   -> {"status": "ready", ...}

Every error is a JSON `{"error": "<one line>"}`. Limits (`ServingLimits`, from the environment): a body over
ADRANK_MAX_BODY_BYTES (10 MiB) is answered 413 before it is read; more than ADRANK_MAX_INSTANCES instances, 413;
a POST without Content-Length, 411; a Content-Length that is not one non-negative integer, or a chunked body,
400 / 411; a client that has not sent its headers and body within ADRANK_READ_TIMEOUT_SECONDS, 408; more than
ADRANK_MAX_CONNECTIONS connections at once, 503 with Retry-After, so threads and memory stay bounded. A body that
is not JSON, a missing, unknown or wrongly typed field is a 400 naming the field; instances are checked against
the signature's parse spec before the model runs (`signature`): a wrong type is a 400 naming the feature and the
type it needs. Another path is a 404; a method the route does not take, a 405 with `Allow`.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from components.serving.limits import ServingLimits
from components.serving.predictor import Predictor
from components.serving.request import BadRequest, check_body_size, content_length, serialized_examples


class _SlowClient(Exception):
    """The client did not send its request within the read timeout."""


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

        def _answer(self, status: HTTPStatus, payload: dict, close: bool = False,
                    headers: dict[str, str] | None = None) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has headers only
                self.wfile.write(body)

        def send_error(self, code, message=None, explain=None):
            """http.server's own errors (bad request line, oversized header, unknown method) as JSON, connection
            closed."""
            self._answer(HTTPStatus(code), {"error": message or HTTPStatus(code).phrase}, close=True)

        def _route(self) -> None:
            """The health route takes GET, the predict route POST; another path is a 404, another method a 405.
            Errors close the connection: a body the handler did not read cannot be followed by another request."""
            methods = sorted(method for method, route in (("GET", health_route), ("POST", predict_route))
                             if route == self.path)
            if not methods:
                self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path[:200]}; predict: POST "
                                                             f"{predict_route}, health: GET {health_route}"}, close=True)
            elif self.command not in methods:
                self._answer(HTTPStatus.METHOD_NOT_ALLOWED,
                             {"error": f"{self.command} {self.path} is not served; use {' or '.join(methods)}"},
                             close=True, headers={"Allow": ", ".join(methods)})
            elif self.command == "GET":
                self._answer(HTTPStatus.OK, {"status": "ready", "model": predictor.model_dir})
            else:
                self._predict()

        # http.server calls do_<METHOD>; a method named nowhere here is its own 501
        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _route  # noqa: N815

        def _predict(self) -> None:
            try:
                length = content_length(self.headers)
                check_body_size(length, limits.max_body_bytes)
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
