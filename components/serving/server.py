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
per-request deadline, so a trickle of header bytes cannot hold a connection), or then its body within as long, 408;
more than ADRANK_MAX_CONNECTIONS connections at once, 503 with Retry-After, so connections and memory stay bounded,
except that health comes first: a few connections over the limit (`TRIAGE_CONNECTIONS`) are read for their
request line for at most `TRIAGE_SECONDS`, and a GET of the health route is answered. A request line that is not
`METHOD /path HTTP/x.y` is a 400. A body that is not JSON, nests deeper than `request.MAX_JSON_DEPTH`, or has a
missing, unknown or wrongly typed field is a 400 naming the field; instances are checked against
the signature's parse spec before the model runs (`signature`): a wrong type is a 400 naming the feature and the
type it needs. Another path is a 404; a method the route does not take, a 405 with `Allow`.

The HTTP stack is uvicorn (its h11 protocol) with this module's ASGI app: uvicorn parses and frames HTTP, this
module adds what uvicorn has no setting for (the header deadline, the JSON 400 for a request h11 cannot parse, the
connection limit with health first) in a subclass of its protocol, and the routes and body limits in the app.
docs/serving.md has the load benchmark's figures against the `http.server` server it replaced and why this stack.

The server logs records (one per request, its start, why it cannot start) as JSON lines on stderr
(`components.step_logging`), which Vertex's logging reads as structured entries with their severity.
"""

from __future__ import annotations

import asyncio
import http.client
import io
import json
import logging
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from components.serving.predictor import Predictor
from components.serving.request import BadRequest, check_body_size, content_length, serialized_examples
from components.serving.settings import PORT_VARIABLE, ServingLimits, ServingSettings
from components.step_logging import configure_step_logging
from foundation.log_lines import fields

log = logging.getLogger(__name__)

# Connections over ADRANK_MAX_CONNECTIONS read for a health check, and how long each may take to send its request.
TRIAGE_CONNECTIONS = 8
TRIAGE_SECONDS = 1.0
BUSY = "the server is at its connection limit (ADRANK_MAX_CONNECTIONS); retry"
# The most a request line and its headers may take (h11 answers 431 over it): http.server's was 100 headers.
MAX_HEAD_BYTES = 64 * 1024

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _log_request(method: str, path: str, status: int) -> None:
    method, path = method or "-", path[:200] or "-"
    log.info(f"{method} {path} {status}", extra=fields(method=method, path=path, status=str(status)))


def _json_answer(status: int, payload: dict, headers: dict[str, str] | None = None) -> tuple[int, list, bytes]:
    body = json.dumps(payload).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    head += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    return status, head, body


class PredictionApp:
    """The ASGI app: GET of the health route, POST of the predict route; every answer JSON, an error closing the
    connection (a body the app did not read cannot be followed by another request)."""

    def __init__(self, predictor: Predictor, predict_route: str, health_route: str, limits: ServingLimits):
        self.predictor, self.predict_route, self.health_route, self.limits = (
            predictor, predict_route, health_route, limits)
        self.health = {"status": "ready"}  # where the model lies is the operator's to know (the start-up record)
        # the model calls (and the JSON work around them) run here, off the event loop; the rest wait in its queue
        self.executor = ThreadPoolExecutor(limits.max_concurrent_predictions, thread_name_prefix="adrank-predict")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        status, headers, body = await self._answer(scope, receive)
        if status != HTTPStatus.OK:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        # logged before the body goes out: a client holding its answer finds its line already written
        _log_request(scope["method"], scope["path"], status)
        await send({"type": "http.response.body", "body": body})

    async def _answer(self, scope: Scope, receive: Receive) -> tuple[int, list, bytes]:
        method, path = scope["method"], scope["path"]
        methods = sorted(verb for verb, route in (("GET", self.health_route), ("POST", self.predict_route))
                         if route == path)
        if not methods:
            return _json_answer(HTTPStatus.NOT_FOUND, {"error": f"no route {path[:200]}; predict: POST "
                                                                f"{self.predict_route}, health: GET {self.health_route}"})
        if method not in methods:
            return _json_answer(HTTPStatus.METHOD_NOT_ALLOWED,
                                {"error": f"{method} {path} is not served; use {' or '.join(methods)}"},
                                {"Allow": ", ".join(methods)})
        if method == "GET":
            return _json_answer(HTTPStatus.OK, self.health)
        try:
            length = content_length(_headers(scope))
            check_body_size(length, self.limits.max_body_bytes)
            body = await asyncio.wait_for(_read_body(receive, length), self.limits.read_timeout_seconds)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.executor, self._predict, body)
        except BadRequest as error:
            return _json_answer(error.status, {"error": str(error)})
        except TimeoutError:
            return _json_answer(HTTPStatus.REQUEST_TIMEOUT, {
                "error": f"the request body did not arrive within {self.limits.read_timeout_seconds:g} s "
                         "(ADRANK_READ_TIMEOUT_SECONDS)"})

    def _predict(self, body: bytes) -> tuple[int, list, bytes]:
        try:
            predictions = self.predictor.predict(serialized_examples(body, self.limits.max_instances))
        except BadRequest as error:
            return _json_answer(error.status, {"error": str(error)})
        return _json_answer(HTTPStatus.OK, {"predictions": predictions})

    async def busy(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A connection over the limit: health is answered, anything else 503 with Retry-After."""
        if scope["method"] == "GET" and scope["path"] == self.health_route:
            status, headers, body = _json_answer(HTTPStatus.OK, self.health)
        else:
            status, headers, body = _json_answer(HTTPStatus.SERVICE_UNAVAILABLE, {"error": BUSY}, {"Retry-After": "1"})
        await send({"type": "http.response.start", "status": status, "headers": [*headers, (b"connection", b"close")]})
        _log_request(scope["method"], scope["path"], status)
        await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> http.client.HTTPMessage:
    """The request's headers as `request.content_length` reads them (every value of a repeated header kept)."""
    message = http.client.HTTPMessage()
    for name, value in scope["headers"]:
        message[name.decode("latin-1")] = value.decode("latin-1")
    return message


async def _read_body(receive: Receive, length: int) -> bytes:
    chunks, received = [], 0
    while received < length:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest(f"the body ended after {received} of {length} bytes (Content-Length)")
        chunks.append(message.get("body", b""))
        received += len(chunks[-1])
        if not message.get("more_body", False):
            break
    if received != length:
        raise BadRequest(f"the body ended after {received} of {length} bytes (Content-Length)")
    return b"".join(chunks)


def _raw_answer(transport: asyncio.BaseTransport, status: HTTPStatus, payload: dict,
                extra: str = "") -> None:
    """An answer written straight to the connection, which is then closed: for a request that never became one
    (its head late, unparseable, or over the connection limit), where h11 has no request to answer. Logged first,
    so a client holding the answer finds its line written."""
    _log_request("", "", status)
    if transport.is_closing():
        return
    body = json.dumps(payload).encode()
    head = (f"HTTP/1.1 {status.value} {status.phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n").encode()
    transport.write(head + body)  # type: ignore[attr-defined]
    transport.close()


class BoundedProtocol(H11Protocol):
    """uvicorn's h11 protocol with what uvicorn has no setting for: the request line and headers within one deadline
    (408), a JSON 400 naming what h11 could not parse, and at most `limits.max_connections` connections admitted to
    the app at once, counted from a connection's opening (or its next request's first bytes) to its answer
    (`make_server` binds a subclass to its app and limits)."""

    app_: PredictionApp
    limits: ServingLimits
    admitted: set
    triage: set

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._head = bytearray()  # what has arrived of the request head so far (for the 400's message)
        self._over_limit = False
        if len(self.admitted) < self.limits.max_connections:
            self.admitted.add(self)
            self._arm_head_deadline()
        elif self.app_.health_route and len(self.triage) < TRIAGE_CONNECTIONS:
            self._over_limit = True
            self.triage.add(self)
            self.app = self.app_.busy
            self._arm_head_deadline()
        else:
            _raw_answer(transport, HTTPStatus.SERVICE_UNAVAILABLE, {"error": BUSY}, "retry-after: 1\r\n")

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        self.admitted.discard(self)
        self.triage.discard(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        waiting_for_head = self.cycle is None or self.cycle.response_complete
        if waiting_for_head and not self._over_limit and self not in self.admitted:
            # a kept-alive connection's next request takes a slot again (it gave its slot back when answered)
            if len(self.admitted) >= self.limits.max_connections:
                _raw_answer(self.transport, HTTPStatus.SERVICE_UNAVAILABLE, {"error": BUSY}, "retry-after: 1\r\n")
                return
            self.admitted.add(self)
        if waiting_for_head:
            if self._head_timer is None:  # the next request on a kept-alive connection: its head has a deadline too
                self._arm_head_deadline()
            self._head += data[:MAX_HEAD_BYTES - len(self._head)]
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a request line and headers were parsed
            self._cancel_head_deadline()
            self._head.clear()

    def on_response_complete(self) -> None:
        """An answered connection gives its slot back: kept alive and idle it holds no request (uvicorn closes it after
        the keep-alive timeout), and a client that has closed it must not hold a slot until its close is read."""
        self.admitted.discard(self)
        super().on_response_complete()

    def _arm_head_deadline(self) -> None:
        seconds = self.limits.read_timeout_seconds
        if self._over_limit:
            seconds = min(TRIAGE_SECONDS, seconds)
        self._head_timer = self.loop.call_later(seconds, self._head_late)

    def _cancel_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self._over_limit:
            _raw_answer(self.transport, HTTPStatus.SERVICE_UNAVAILABLE, {"error": BUSY}, "retry-after: 1\r\n")
            return
        _raw_answer(self.transport, HTTPStatus.REQUEST_TIMEOUT, {
            "error": f"the request line and headers did not arrive within {self.limits.read_timeout_seconds:g} s "
                     "(ADRANK_READ_TIMEOUT_SECONDS)"})

    def send_400_response(self, msg: str) -> None:
        """What h11 could not parse (uvicorn calls this from its `except h11.RemoteProtocolError`), as JSON."""
        self._cancel_head_deadline()
        error = sys.exc_info()[1]
        status, message = _malformed(bytes(self._head), error, self.limits.max_body_bytes)
        _raw_answer(self.transport, status, {"error": message})


def _malformed(head: bytes, error: BaseException | None, max_body_bytes: int) -> tuple[HTTPStatus, str]:
    """Why a request head was refused: the Content-Length rules' own answer where that header is at fault (h11
    refuses a malformed or huge one), else the request line and what h11 found."""
    line, _, rest = head.partition(b"\n")
    try:
        headers = http.client.parse_headers(io.BytesIO(rest.split(b"\r\n\r\n")[0] + b"\r\n\r\n"))
        if headers.get_all("Content-Length"):
            check_body_size(content_length(headers), max_body_bytes)
    except BadRequest as bad:
        return bad.status, str(bad)
    except (http.client.HTTPException, ValueError):
        pass
    text = line.decode("latin-1").rstrip("\r")
    return (HTTPStatus(getattr(error, "error_status_hint", 400)),
            f"malformed request {text[:80]!r} ({error or 'unparseable'}): expected 'METHOD /path HTTP/1.1' and headers")


class PredictionServer:
    """The listening socket (bound here, so a port in use fails at once) and the uvicorn server on it, with the
    `serve_forever` / `shutdown` / `server_close` of a standard-library server."""

    def __init__(self, app: PredictionApp, host: str, port: int, limits: ServingLimits):
        self.app, self.limits = app, limits
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(2048)
        except OSError:
            self.socket.close()
            raise
        self.server_address = self.socket.getsockname()[:2]
        protocol = type("Protocol", (BoundedProtocol,), {"app_": app, "limits": limits, "admitted": set(),
                                                         "triage": set()})
        config = uvicorn.Config(app, http=protocol, ws="none", lifespan="off", loop="asyncio", log_config=None,
                                access_log=False, server_header=False,
                                h11_max_incomplete_event_size=MAX_HEAD_BYTES,
                                timeout_keep_alive=max(1, round(limits.read_timeout_seconds)),
                                timeout_graceful_shutdown=max(1, round(limits.read_timeout_seconds)))
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()

    def serve_forever(self) -> None:
        """Serve until `shutdown` (or SIGTERM / SIGINT, when run from the main thread: Vertex stops a container so)."""
        self._stopped.clear()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.app.executor.shutdown(wait=False, cancel_futures=True)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving (requests under way are finished) and wait until `serve_forever` has returned."""
        self._server.should_exit = True
        self._stopped.wait()

    def server_close(self) -> None:
        self.socket.close()


def make_server(predictor: Predictor, port: int, predict_route: str, health_route: str,
                host: str = "0.0.0.0", limits: ServingLimits = ServingLimits()) -> PredictionServer:
    """The server on `host:port`, answering with `predictor`, bounded by `limits` (not yet serving)."""
    return PredictionServer(PredictionApp(predictor, predict_route, health_route, limits), host, port, limits)


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
