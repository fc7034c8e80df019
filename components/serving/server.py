"""The prediction server of the `serving` image: adrank's serving SavedModel on the training TensorFlow
(`python -m components.serving.server`).

Vertex AI's prebuilt TensorFlow prediction containers stop at TF 2.15, older than the TensorFlow that
trains and exports the model, so the Model Registry's serving image is built from this repository's
cpu lock instead (Dockerfile target `serving`). It follows Vertex's custom-container contract: Vertex
sets `AIP_HTTP_PORT`, `AIP_HEALTH_ROUTE`, `AIP_PREDICT_ROUTE` and `AIP_STORAGE_URI` (the model
directory; TensorFlow reads `gs://` itself). Requests use TF Serving's JSON row format (`request`):

    POST <predict route> {"instances": [{"b64": "<base64 of a serialized tf.Example>"}, ...]}
    -> {"predictions": [{"<task>": <probability>, ...}, ...]}
    GET <health route>   -> {"status": "ready"}

Every error is a JSON `{"error": "<one line>"}`. Limits (`ServingLimits`, from the environment): a body over
ADRANK_MAX_BODY_BYTES (10 MiB) is answered 413 before it is read; more than ADRANK_MAX_INSTANCES instances, 413;
a POST without Content-Length, 411; a Content-Length that is not one non-negative integer, or a chunked body,
400 / 411; a client that has not sent its request line and headers within ADRANK_READ_TIMEOUT_SECONDS in total (a
per-connection deadline, so a trickle of header bytes cannot hold a thread), or then its body within as long, 408;
more than ADRANK_MAX_CONNECTIONS connections at once, 503 with Retry-After, so threads and memory stay bounded,
except that health comes first: a few connections over the limit (`TRIAGE_CONNECTIONS`) are read for their
request line for at most `TRIAGE_SECONDS`, and a GET of the health route is answered. A request line that is not
`METHOD /path HTTP/x.y` is a 400. A body that is not JSON, nests deeper than `request.MAX_JSON_DEPTH`, or has a
missing, unknown or wrongly typed field is a 400 naming the field; instances are checked against
the signature's parse spec before the model runs (`signature`): a wrong type is a 400 naming the feature and the
type it needs. Another path is a 404; a method the route does not take, a 405 with `Allow`.

The server logs records (one per request, its start, why it cannot start) as JSON lines on stderr
(`components.step_logging`), which Vertex's logging reads as structured entries with their severity.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from components.serving.predictor import Predictor
from components.serving.request import BadRequest, check_body_size, content_length, serialized_examples
from components.serving.settings import PORT_VARIABLE, ServingLimits, ServingSettings
from components.step_logging import configure_step_logging
from foundation.log_lines import fields

log = logging.getLogger(__name__)

# Connections over ADRANK_MAX_CONNECTIONS read for a health check, and how long each may take to send its request.
TRIAGE_CONNECTIONS = 8
TRIAGE_SECONDS = 1.0


class _SlowClient(Exception):
    """The client did not send its request within the read timeout."""


class _HeaderDeadline:
    """The handler's `rfile`: the request line and headers of one request must all arrive before one deadline
    (`start` sets it), however the client spaces its bytes; the body (`read1`) is read as the buffered reader does,
    under the body's own deadline (`_read_body`)."""

    def __init__(self, rfile, connection: socket.socket, seconds: float):
        self._rfile, self._connection, self._seconds = rfile, connection, seconds
        self._deadline = time.monotonic() + seconds
        self.expired = False

    def start(self) -> None:
        self._deadline, self.expired = time.monotonic() + self._seconds, False

    def readline(self, limit: int = -1) -> bytes:
        line = bytearray()
        while limit < 0 or len(line) < limit:
            left = self._deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                raise TimeoutError("the request line and headers did not arrive in time")
            self._connection.settimeout(left)
            try:
                buffered = self._rfile.peek(1)  # at most one read from the socket
            except TimeoutError:
                self.expired = True
                raise
            if not buffered:
                break
            end = buffered.find(b"\n")
            take = len(buffered) if end < 0 else end + 1
            if limit >= 0:
                take = min(take, limit - len(line))
            line += self._rfile.read(take)  # from the buffer
            if line.endswith(b"\n"):
                break
        return bytes(line)

    def __getattr__(self, name):
        return getattr(self._rfile, name)


class BoundedHTTPServer(ThreadingHTTPServer):
    """One thread per connection, at most `limits.max_connections` at once; above that a connection is answered
    503 at once, from the accepting thread, and closed."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, handler, limits: ServingLimits, health_route: str = "", health: dict | None = None):
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._triage_slots = threading.BoundedSemaphore(TRIAGE_CONNECTIONS)
        self._health_route, self._health = health_route.encode("latin-1", "replace"), health or {}
        self.rejected_connections = 0
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            self.rejected_connections += 1
            if self._health_route and self._triage_slots.acquire(blocking=False):
                threading.Thread(target=self._triage, args=(request,), name="adrank-health-triage",
                                 daemon=True).start()
                return
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

    def handle_error(self, request, client_address) -> None:
        """A client that went away mid-request (reset, broken pipe) is one log line, not a traceback per request."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            log.warning(f"connection from {client_address[0]} ended: {type(error).__name__}")
        else:
            super().handle_error(request, client_address)

    def _triage(self, request: socket.socket) -> None:
        """A connection over the limit: answered as health when it is a GET of the health route that arrives within
        `TRIAGE_SECONDS`, else 503 like any connection over the limit."""
        try:
            head = _request_head(request, min(TRIAGE_SECONDS, self.limits.read_timeout_seconds))
            words = head.split(b"\r\n", 1)[0].split()
            if len(words) == 3 and words[0] == b"GET" and words[1] == self._health_route:
                body = json.dumps(self._health).encode()
                request.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 f"{len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
            else:
                _reject_busy(request)
        except OSError:
            pass
        finally:
            self.shutdown_request(request)
            self._triage_slots.release()


def _request_head(request: socket.socket, seconds: float, most: int = 8192) -> bytes:
    """What the client sends of its request line and headers within `seconds` (at most `most` bytes)."""
    deadline, head = time.monotonic() + seconds, b""
    while b"\r\n\r\n" not in head and len(head) < most:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        request.settimeout(left)
        try:
            chunk = request.recv(most - len(head))
        except TimeoutError:
            break
        if not chunk:
            break
        head += chunk
    return head


def _reject_busy(request: socket.socket) -> None:
    body = json.dumps({"error": "the server is at its connection limit (ADRANK_MAX_CONNECTIONS); retry"}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
            "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
    try:
        request.settimeout(1.0)
        request.sendall(head + body)
    except OSError:
        pass


class PredictionHandler(BaseHTTPRequestHandler):
    """One connection of the prediction server: the health route (GET) and the predict route (POST), every answer
    JSON, every read under the limits' deadlines. `make_server` binds a subclass to its predictor, routes and
    limits."""

    predictor: Predictor
    predict_route: str
    health_route: str
    health: dict[str, str]
    limits: ServingLimits
    default_request_version = "HTTP/1.0"  # an error before the version is known still gets a status line
    _answered = False

    def setup(self) -> None:
        super().setup()
        self._head = _HeaderDeadline(self.rfile, self.connection, self.limits.read_timeout_seconds)
        self.rfile = self._head  # type: ignore[assignment]  # reads as the buffered reader does

    def handle_one_request(self) -> None:
        """One request; its line and headers within the read timeout in total, else 408 and the connection
        closed."""
        self._head.start()
        self._answered = False
        # what the status line and the request's log record read, before a request line is parsed (one that never
        # completes is still answered 408 and logged)
        self.command, self.path, self.requestline = "", "", ""
        self.request_version = self.default_request_version
        super().handle_one_request()  # a TimeoutError reading the head closes the connection
        if self._head.expired and not self._answered:
            self.close_connection = True
            try:
                self._answer(HTTPStatus.REQUEST_TIMEOUT, {
                    "error": f"the request line and headers did not arrive within "
                             f"{self.limits.read_timeout_seconds:g} s (ADRANK_READ_TIMEOUT_SECONDS)"}, close=True)
            except OSError:
                pass

    def parse_request(self) -> bool:
        """`METHOD /path HTTP/x.y`, or a 400 naming what came instead (http.server itself would read a blank
        line as no request and two words as HTTP/0.9)."""
        line = str(getattr(self, "raw_requestline", b""), "iso-8859-1").rstrip("\r\n")
        if len(line.split()) != 3:
            self.command, self.path, self.requestline = "", "", line
            self.request_version = self.default_request_version
            self.close_connection = True
            self.send_error(HTTPStatus.BAD_REQUEST, f"malformed request line {line[:80]!r}: expected "
                                                    "'METHOD /path HTTP/1.1'")
            return False
        return super().parse_request()

    def _answer(self, status: HTTPStatus, payload: dict, close: bool = False,
                headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self._answered = True
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
        self.connection.settimeout(self.limits.read_timeout_seconds)  # the head's deadline is over: each read again
        methods = sorted(method for method, route in (("GET", self.health_route), ("POST", self.predict_route))
                         if route == self.path)
        if not methods:
            self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path[:200]}; predict: POST "
                                                         f"{self.predict_route}, health: GET {self.health_route}"},
                         close=True)
        elif self.command not in methods:
            self._answer(HTTPStatus.METHOD_NOT_ALLOWED,
                         {"error": f"{self.command} {self.path} is not served; use {' or '.join(methods)}"},
                         close=True, headers={"Allow": ", ".join(methods)})
        elif self.command == "GET":
            self._answer(HTTPStatus.OK, self.health)
        else:
            self._predict()

    # http.server calls do_<METHOD>; a method named nowhere here is its own 501
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _route  # noqa: N815

    def _predict(self) -> None:
        try:
            length = content_length(self.headers)
            check_body_size(length, self.limits.max_body_bytes)
            body = self._read_body(length)
            predictions = self.predictor.predict(serialized_examples(body, self.limits.max_instances))
        except BadRequest as error:
            # the body was not (fully) read: the connection cannot carry another request
            self._answer(error.status, {"error": str(error)}, close=True)
            return
        except _SlowClient:
            self._answer(HTTPStatus.REQUEST_TIMEOUT, {
                "error": f"the request body did not arrive within {self.limits.read_timeout_seconds:g} s "
                         "(ADRANK_READ_TIMEOUT_SECONDS)"}, close=True)
            return
        self._answer(HTTPStatus.OK, {"predictions": predictions})

    def _read_body(self, length: int) -> bytes:
        """`length` bytes within the read timeout in total (not per read), so a trickle cannot hold a thread."""
        deadline = time.monotonic() + self.limits.read_timeout_seconds
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

    def log_message(self, format, *args):  # one INFO record per request
        """Also for a request whose line could not be parsed (no command or path yet)."""
        command, path = getattr(self, "command", None) or "-", getattr(self, "path", "")[:200] or "-"
        status = args[1] if len(args) > 1 else ""
        log.info(f"{command} {path} {status}", extra=fields(method=command, path=path, status=str(status)))


def make_server(predictor: Predictor, port: int, predict_route: str, health_route: str,
                host: str = "0.0.0.0", limits: ServingLimits = ServingLimits()) -> BoundedHTTPServer:
    """The server on `host:port`, answering with `predictor`, bounded by `limits` (not yet serving)."""
    health = {"status": "ready"}  # where the model lies is the operator's to know (the start-up record), no client's
    handler = type("Handler", (PredictionHandler,), {
        "predictor": predictor, "predict_route": predict_route, "health_route": health_route, "health": health,
        "limits": limits,
        "timeout": limits.read_timeout_seconds,  # each read; the request line and headers together: `_HeaderDeadline`
    })
    return BoundedHTTPServer((host, port), handler, limits, health_route=health_route, health=health)


def main() -> int:
    configure_step_logging()
    try:
        settings = ServingSettings.from_environment()
        limits = ServingLimits.from_environment()
    except ValueError as error:
        log.error(f"serving: {error}")
        return 2
    model_dir, port = settings.storage_uri, settings.http_port
    predict_route, health_route = settings.predict_route, settings.health_route
    try:
        predictor = Predictor(model_dir, limits.max_concurrent_predictions)
    except (OSError, ValueError) as error:
        log.error(f"serving: cannot load the model at AIP_STORAGE_URI={model_dir}: "
                  f"{str(error).strip().splitlines()[0]}")
        return 2
    try:
        server = make_server(predictor, port, predict_route, health_route, limits=limits)
    except OSError as error:  # the port is taken, or not this process's to bind
        log.error(f"serving: cannot listen on port {port} ({PORT_VARIABLE}): {error.strerror or error}")
        return 2
    log.info(f"serving {model_dir} on :{port} (predict {predict_route}, health {health_route}; {limits})")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
