"""The prediction server: Vertex's custom-container contract on a real SavedModel, and the server under abuse:
every malformed framing gets an HTTP status, bodies and instances are capped, slow clients time out, connections
are bounded, a wrong path or method is a 404 / 405, and instances are checked against the serving signature."""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import threading
import time

import pytest

from components.serving import server as serving_server
from components.serving.predictor import Predictor
from components.serving.server import make_server
from components.serving.settings import ServingLimits
from foundation.log_lines import record_from_line

LIMITS = ServingLimits(max_body_bytes=4096, max_instances=3, read_timeout_seconds=0.5, max_connections=2)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import tensorflow as tf

    class Ranker(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            parsed = tf.io.parse_example(examples, {
                "ad_bid": tf.io.FixedLenFeature([], tf.float32),
                "ad_id": tf.io.FixedLenFeature([], tf.string, default_value=""),
                "user_interests": tf.io.VarLenFeature(tf.string),
            })
            return {"engagement": tf.sigmoid(parsed["ad_bid"])}

    model_dir = tmp_path_factory.mktemp("model") / "1"
    ranker = Ranker()
    tf.saved_model.save(ranker, str(model_dir), signatures={"serving_default": ranker.serve})
    return model_dir


@pytest.fixture(scope="module")
def server(model_dir):
    server = make_server(Predictor(str(model_dir)), 0, "/predict", "/health", host="127.0.0.1", limits=LIMITS)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def raw_answer(server, raw: bytes, then_wait: float = 0.0) -> bytes:
    """Send `raw` on a fresh connection and read the answer until the server closes it."""
    with socket.create_connection(server.server_address, timeout=10) as connection:
        connection.sendall(raw)
        if then_wait:
            time.sleep(then_wait)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def exchange(server, raw: bytes, then_wait: float = 0.0) -> tuple[int, dict]:
    """(status, JSON body) of the answer to `raw`."""
    head, _, body = raw_answer(server, raw, then_wait).partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else {}


def post(body: bytes, headers: str | None = None, path: str = "/predict", method: str = "POST") -> bytes:
    headers = f"Content-Length: {len(body)}\r\n" if headers is None else headers
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


def example(**features) -> dict:
    from tensorflow.core.example import example_pb2, feature_pb2

    values = {}
    for name, value in features.items():
        if isinstance(value, float):
            values[name] = feature_pb2.Feature(float_list=feature_pb2.FloatList(value=[value]))
        elif isinstance(value, int):
            values[name] = feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=[value]))
        else:
            values[name] = feature_pb2.Feature(bytes_list=feature_pb2.BytesList(value=[v.encode() for v in value]))
    serialized = example_pb2.Example(features=feature_pb2.Features(feature=values)).SerializeToString()
    return {"b64": base64.b64encode(serialized).decode()}


def instances(*rows) -> bytes:
    return json.dumps({"instances": list(rows)}).encode()


def test_a_good_request_is_answered(server):
    status, answer = exchange(server, post(instances(example(ad_bid=0.0, ad_id=["a1"]), example(ad_bid=0.0))))
    assert status == 200 and answer["predictions"] == [{"engagement": 0.5}, {"engagement": 0.5}]


@pytest.mark.parametrize("headers, status, message", [
    ("", 411, "a POST needs a Content-Length header"),
    ("Transfer-Encoding: chunked\r\n", 411, "chunked request bodies are not accepted"),
    ("Content-Length: abc\r\n", 400, "Content-Length 'abc' is not a non-negative integer"),
    ("Content-Length: -5\r\n", 400, "Content-Length '-5' is not a non-negative integer"),
    ("Content-Length: 3\r\nContent-Length: 4\r\n", 400, "conflicting Content-Length headers"),
    ("Content-Length: 99999999999999999999999999\r\n", 413, "request body of 99999999999999999999999999 bytes is "
                                                            "over the limit of 4096"),
    ("Content-Length: 100000000\r\n", 413, "over the limit of 4096 (ADRANK_MAX_BODY_BYTES)"),
])
def test_bad_framing_gets_an_http_status_not_a_dropped_connection(server, headers, status, message):
    got_status, answer = exchange(server, post(b"", headers))
    assert got_status == status and message in answer["error"]


def test_a_client_that_announces_more_than_it_sends_times_out(server):
    started = time.monotonic()
    status, answer = exchange(server, post(b"{}", "Content-Length: 1000\r\n"))
    assert status == 408 and "within 0.5 s" in answer["error"]
    assert time.monotonic() - started < 5


def test_too_many_instances_is_413(server):
    status, answer = exchange(server, post(instances(*[example(ad_bid=1.0)] * 4)))
    assert status == 413 and answer["error"].startswith("4 instances, more than the 3 a request may carry")


@pytest.mark.parametrize("row, message", [
    (example(ad_bid=["high"]), "instances[0]: feature 'ad_bid' is a bytes_list; expected 1 float32 (float_list)"),
    (example(ad_bid=1.0, ad_id=7), "instances[0]: feature 'ad_id' is a int64_list; expected 1 string (bytes_list)"),
    (example(ad_id=["a"]), "instances[0]: feature 'ad_bid' is missing; expected 1 float32 (float_list)"),
    (example(ad_bid=1.0, user_interests=3), "instances[0]: feature 'user_interests' is a int64_list; expected a "
                                            "list of string (bytes_list)"),
    ({"b64": base64.b64encode(b"\xff\xff not a proto").decode()}, "instances[0]: not a serialized tf.Example"),
])
def test_instances_are_checked_against_the_serving_signature(server, row, message):
    status, answer = exchange(server, post(instances(row)))
    assert status == 400 and answer["error"] == message


def test_the_signature_expectations_are_read_from_the_saved_model(model_dir):
    expectations = Predictor(str(model_dir)).expectations
    assert {name: (e.dtype, e.values, e.required) for name, e in expectations.items()} == {
        "ad_bid": ("float32", 1, True), "ad_id": ("string", 1, False), "user_interests": ("string", None, False),
    }


def test_connections_over_the_limit_get_503_and_the_server_recovers(server):
    held = [socket.create_connection(server.server_address, timeout=10) for _ in range(LIMITS.max_connections)]
    try:
        for connection in held:  # each holds a handler thread, announcing a body it never sends
            connection.sendall(post(b"", "Content-Length: 100\r\n"))
        time.sleep(0.1)
        status, answer = exchange(server, post(instances(example(ad_bid=0.0))))
        assert status == 503 and "connection limit" in answer["error"]
    finally:
        for connection in held:
            connection.close()
    time.sleep(LIMITS.read_timeout_seconds + 0.3)
    assert exchange(server, post(instances(example(ad_bid=0.0))))[0] == 200


def test_limits_come_from_the_environment_and_bad_values_are_named():
    limits = ServingLimits.from_environment({"ADRANK_MAX_BODY_BYTES": "1024", "ADRANK_READ_TIMEOUT_SECONDS": "2.5"})
    assert limits.max_body_bytes == 1024 and limits.read_timeout_seconds == 2.5 and limits.max_instances == 1000
    with pytest.raises(ValueError, match=r"ADRANK_MAX_CONNECTIONS='0': expected a positive whole number"):
        ServingLimits.from_environment({"ADRANK_MAX_CONNECTIONS": "0"})


@pytest.mark.parametrize("variable, value, message", [
    ("ADRANK_READ_TIMEOUT_SECONDS", "inf", "not finite"),
    ("ADRANK_READ_TIMEOUT_SECONDS", "-inf", "not finite"),
    ("ADRANK_READ_TIMEOUT_SECONDS", "nan", "not finite"),
    ("ADRANK_READ_TIMEOUT_SECONDS", "ten", "not a number"),
    ("ADRANK_READ_TIMEOUT_SECONDS", "1e300", "over the bound of 3600"),
    ("ADRANK_MAX_BODY_BYTES", "1e6", "not a number; expected a positive whole number"),
    ("ADRANK_MAX_CONNECTIONS", "1000000", "over the bound of 10000 (one thread per connection)"),
    ("ADRANK_MAX_INSTANCES", "", "not a number"),
])
def test_non_finite_non_numeric_and_unbounded_limits_are_refused_naming_the_variable(variable, value, message):
    with pytest.raises(ValueError, match=f"{variable}=.*{re.escape(message)}"):
        ServingLimits.from_environment({variable: value})


@pytest.fixture()
def server_log(capsys):
    """`server_log()`: the records `serving_server.main()` wrote as JSON lines on stderr (its logging undone)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield lambda: [record for record in map(record_from_line, capsys.readouterr().err.splitlines()) if record]
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_server_refuses_to_start_with_an_infinite_read_timeout(monkeypatch, tmp_path, server_log):
    monkeypatch.setenv("AIP_STORAGE_URI", str(tmp_path))
    monkeypatch.setenv("ADRANK_READ_TIMEOUT_SECONDS", "inf")
    assert serving_server.main() == 2
    (record,) = server_log()
    assert record.levelno == logging.ERROR and "ADRANK_READ_TIMEOUT_SECONDS='inf': not finite" in record.getMessage()


@pytest.mark.parametrize("raw", [
    b"GARBAGE\r\n\r\n", b"\r\n\r\n", b"GET /health\r\n\r\n", b"GET /health HTTP/1.1 extra\r\n\r\n",
    b"GET /health FOO/1.1\r\n\r\n", b"POST\r\nContent-Length: 2\r\n\r\n{}",
])
def test_a_malformed_request_line_is_a_400(server, raw, capsys):
    status, answer = exchange(server, raw)
    assert status == 400 and answer["error"]
    assert "Traceback" not in capsys.readouterr().err


def test_deeply_nested_json_is_a_400_without_a_traceback(server, capsys):
    for depth in (40, 2000):  # 2000: past the decoder's own recursion limit, within the 4096-byte body cap
        body = b'{"instances": ' + b"[" * depth + b"]" * depth + b"}"
        status, answer = exchange(server, post(body, f"Content-Length: {len(body)}\r\n"))
        assert status == 400 and "nests arrays and objects more than 32 levels deep" in answer["error"], answer
    body = b'{"instances": ' + b"[" * 3000 + b"}"  # deep and not JSON
    status, answer = exchange(server, post(body, f"Content-Length: {len(body)}\r\n"))
    assert status == 400
    assert "Traceback" not in capsys.readouterr().err


def test_the_depth_check_skips_brackets_inside_strings():
    from components.serving.request import BadRequest, check_json_depth

    check_json_depth(b'{"instances": [{"b64": "' + b"[" * 100 + b'\\"[["}]}')
    with pytest.raises(BadRequest, match="more than 2 levels"):
        check_json_depth(b'[[["]]]"]]]', max_depth=2)


def test_health_keeps_answering_while_clients_trickle_their_headers(server):
    """A handful of sockets (twice the connection limit) each send one header byte every 0.1 s for 2 s: each is
    cut off at the header deadline (0.5 s), and /health is answered 200 all along (through the triage of
    connections over the limit while they hold the slots)."""
    trickling = 2 * LIMITS.max_connections
    ends: list[tuple[float, bytes]] = []

    def trickle() -> None:
        started = time.monotonic()
        with socket.create_connection(server.server_address, timeout=5) as connection:
            connection.sendall(b"POST /predict HTTP/1.1\r\n")
            answer = b""
            try:
                for _ in range(20):
                    connection.sendall(b"X")
                    time.sleep(0.1)
            except OSError:
                pass  # the server closed the connection
            try:
                connection.settimeout(2)
                while chunk := connection.recv(4096):
                    answer += chunk
            except OSError:
                pass
        ends.append((time.monotonic() - started, answer))

    threads = [threading.Thread(target=trickle) for _ in range(trickling)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    health = []
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        health.append(exchange(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")[0])
        time.sleep(0.05)
    for thread in threads:
        thread.join(10)
    assert health and set(health) == {200}, health
    assert len(ends) == trickling
    statuses = [answer.split(b" ", 2)[1] if answer else b"" for _, answer in ends]
    assert set(statuses) <= {b"408", b"503"}, [a[:12] for _, a in ends]
    assert b"408" in statuses  # the ones holding a slot: cut off
    assert all(seconds < 1.8 for seconds, _ in ends), ends  # before their 2 s trickle was over


def test_a_fitting_example_is_built_from_the_models_signature(server, model_dir):
    from components.serving.signature import fitting_example

    expectations = Predictor(str(model_dir)).expectations
    rows = [{"b64": base64.b64encode(fitting_example(expectations, i)).decode()} for i in range(3)]
    status, answer = exchange(server, post(json.dumps({"instances": rows}).encode()))
    assert status == 200 and len(answer["predictions"]) == 3


@pytest.mark.parametrize("body, message", [
    (b"{not json", "request body is not JSON"),
    (b"[1, 2]", 'request body: expected an object {"instances": [...]}, got an array'),
    (b'{"rows": []}', "unknown field 'rows' in the request; expected \"instances\" (and optionally \"parameters\", "
                      "\"signature_name\")"),
    (b'{"parameters": {}}', 'field "instances" is missing'),
    (b'{"instances": []}', '"instances": expected a non-empty list of {"b64": "<base64 serialized tf.Example>"}, got '
                           'an empty list'),
    (b'{"instances": {"b64": "AA=="}}', '"instances": expected a non-empty list of {"b64": "<base64 serialized '
                                        'tf.Example>"}, got an object'),
    (b'{"instances": ["AA=="]}', 'instances[0]: expected {"b64": "<base64 serialized tf.Example>"}, got a string'),
    (b'{"instances": [{"ad_bid": 1.0}]}', 'instances[0]: expected {"b64": "<base64 serialized tf.Example>"}; '
                                          "unknown field 'ad_bid'"),
    (b'{"instances": [{}]}', 'instances[0]: expected {"b64": "<base64 serialized tf.Example>"}; field "b64" is '
                             "missing"),
    (b'{"instances": [{"b64": 12}]}', "instances[0].b64: expected a string (base64 of a serialized tf.Example), got "
                                      "a number"),
    (b'{"instances": [{"b64": "%%%"}]}', "instances[0].b64: not base64"),
    (b'{"instances": [{"b64": "AA=="}], "parameters": {"top_k": 3}}', "\"parameters\": unknown parameter 'top_k'; "
                                                                       "this model takes none"),
    (b'{"instances": [{"b64": "AA=="}], "parameters": [1]}', '"parameters": expected an object, got an array'),
    (b'{"instances": [{"b64": "AA=="}], "signature_name": "tpu"}', '"signature_name": "tpu" is not served; the '
                                                                   'server serves "serving_default"'),
])
def test_a_bad_request_is_a_400_naming_the_field(server, body, message):
    status, answer = exchange(server, post(body))
    assert status == 400 and answer["error"].startswith(message) and "\n" not in answer["error"]


def test_the_optional_fields_of_vertex_and_tf_serving_are_accepted(server):
    body = json.dumps({"instances": [example(ad_bid=0.0)], "parameters": {}, "signature_name": "serving_default"})
    status, answer = exchange(server, post(body.encode()))
    assert status == 200 and answer["predictions"] == [{"engagement": 0.5}]


def test_a_body_over_the_cap_is_413_without_reading_it(server):
    """The client announces 1 MB and sends 1 KB of it, then waits: the 413 comes from the headers, at once (a
    server reading the body would wait for the rest and answer 408 after the read timeout)."""
    raw = post(b"x" * 1024, "Content-Length: 1048576\r\n")
    status, answer = exchange(server, raw)
    assert status == 413
    assert answer == {"error": "request body of 1048576 bytes is over the limit of 4096 (ADRANK_MAX_BODY_BYTES)"}


@pytest.mark.parametrize("method, path, status, allow", [
    ("POST", "/predictions", 404, None),
    ("GET", "/nowhere", 404, None),
    ("GET", "/predict", 405, "POST"),
    ("PUT", "/predict", 405, "POST"),
    ("DELETE", "/predict", 405, "POST"),
    ("POST", "/health", 405, "GET"),
    ("PATCH", "/health", 405, "GET"),
])
def test_a_wrong_path_is_404_and_a_wrong_method_405(server, method, path, status, allow):
    raw = raw_answer(server, post(instances(example(ad_bid=0.0)), path=path, method=method))
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert int(lines[0].split()[1]) == status
    headers = [line.lower() for line in lines[1:]]  # header names are case-insensitive
    error = json.loads(body)["error"]
    if allow is None:
        assert error.startswith(f"no route {path}; predict: POST /predict, health: GET /health")
        assert not any(line.startswith("allow:") for line in headers)
    else:
        assert error == f"{method} {path} is not served; use {allow}"
        assert f"allow: {allow.lower()}" in headers


def test_head_is_answered_with_headers_only(server):
    raw = raw_answer(server, b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split()[1] == b"405" and b"allow: get" in head.lower() and body == b""


def test_the_health_route_answers_ready_without_telling_where_the_model_lies(server, model_dir):
    status, answer = exchange(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and answer == {"status": "ready"}
    assert str(model_dir.parent) not in json.dumps(answer)


@pytest.mark.parametrize("partial", [b"GET /hea", b"", b"POST /predict HTTP/1.1\r\nContent-Le"])
def test_a_request_that_never_completes_is_a_408_without_a_traceback(server, partial, capsys):
    """The client sends part of its request line (or nothing, or part of a header) and waits: answered 408 once the
    read timeout (0.5 s) is over, one request record, no traceback (the status line and the record used to read a
    request line that was never parsed)."""
    started = time.monotonic()
    with socket.create_connection(server.server_address, timeout=5) as connection:
        connection.sendall(partial)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert time.monotonic() - started < 3
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"408", answer
    assert "did not arrive within 0.5 s (ADRANK_READ_TIMEOUT_SECONDS)" in json.loads(body)["error"]
    time.sleep(0.1)
    assert "Traceback" not in capsys.readouterr().err
    assert exchange(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


@pytest.mark.parametrize("port", ["abc", "99999", "0", "-1", "80.5", ""])
def test_a_port_that_is_not_one_is_a_one_line_error(monkeypatch, tmp_path, server_log, port):
    monkeypatch.setenv("AIP_STORAGE_URI", str(tmp_path))
    monkeypatch.setenv("AIP_HTTP_PORT", port)
    assert serving_server.main() == 2
    (record,) = server_log()
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (f"serving: AIP_HTTP_PORT={port!r}: not a port; expected a whole number from 1 "
                                   "to 65535")


def test_a_port_in_use_is_a_one_line_error(monkeypatch, model_dir, server, server_log):
    taken = server.server_address[1]
    monkeypatch.setenv("AIP_STORAGE_URI", str(model_dir))
    monkeypatch.setenv("AIP_HTTP_PORT", str(taken))
    assert serving_server.main() == 2
    (record,) = server_log()
    assert record.getMessage() == f"serving: cannot listen on port {taken} (AIP_HTTP_PORT): Address already in use"


@pytest.fixture(scope="module")
def vertex_server(tmp_path_factory):
    """The server as Vertex starts it: its own routes, default limits, a two-task model."""
    import tensorflow as tf

    class Ranker(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            parsed = tf.io.parse_example(examples, {"ad_bid": tf.io.FixedLenFeature([], tf.float32)})
            return {"engagement": tf.sigmoid(parsed["ad_bid"]), "install": tf.sigmoid(-parsed["ad_bid"])}

    model_dir = tmp_path_factory.mktemp("two_tasks") / "1"
    ranker = Ranker()
    tf.saved_model.save(ranker, str(model_dir), signatures={"serving_default": ranker.serve})
    server = make_server(Predictor(str(model_dir)), 0, "/v1/predict", "/v1/health", host="127.0.0.1")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def call(url: str, body: bytes | None = None) -> tuple[int, dict]:
    """(status, JSON body) through urllib, as an HTTP client library sees the server."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_server_answers_vertex_prediction_requests(vertex_server):
    import math

    assert call(vertex_server + "/v1/health")[0] == 200
    status, answer = call(vertex_server + "/v1/predict",
                          instances(example(ad_bid=0.0), example(ad_bid=2.0)))
    assert status == 200
    assert [row["engagement"] for row in answer["predictions"]] == pytest.approx([0.5, 1 / (1 + math.exp(-2))])
    assert [row["install"] for row in answer["predictions"]] == pytest.approx([0.5, 1 / (1 + math.exp(2))])


def test_an_http_client_sees_a_bad_request_as_one_json_line(vertex_server):
    status, answer = call(vertex_server + "/v1/predict",
                          json.dumps({"instances": [{"b64": "bm90IGFuIGV4YW1wbGU="}]}).encode())
    assert status == 400 and answer["error"] == "instances[0]: not a serialized tf.Example"
    assert call(vertex_server + "/v1/predict")[0] == 405


def test_a_request_is_logged_before_its_body_goes_out(model_dir, caplog):
    """A client that holds its answer finds the access line written (the next test's log cannot receive it late)."""
    import asyncio

    from components.serving.server import PredictionApp

    app = PredictionApp(Predictor(str(model_dir)), "/predict", "/health", LIMITS)
    lines_when_sent: list[list[str]] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.body":
            lines_when_sent.append([r.getMessage() for r in caplog.records if r.name == serving_server.log.name])

    with caplog.at_level(logging.INFO, logger=serving_server.log.name):
        for method, path in [("GET", "/predict"), ("GET", "/health")]:
            scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
            asyncio.run(app(scope, receive, send))
    app.executor.shutdown()
    assert lines_when_sent == [["GET /predict 405"], ["GET /predict 405", "GET /health 200"]]


def test_the_server_names_a_missing_model_in_one_line(monkeypatch, tmp_path, server_log):
    monkeypatch.delenv("AIP_STORAGE_URI", raising=False)
    assert serving_server.main() == 2
    assert [(r.levelno, r.getMessage()) for r in server_log()] == [
        (logging.ERROR, "serving: AIP_STORAGE_URI is not set (Vertex sets it to the model's artifact directory)")]
    monkeypatch.setenv("AIP_STORAGE_URI", str(tmp_path / "no-model"))
    assert serving_server.main() == 2
    (record,) = server_log()
    assert record.getMessage().startswith(f"serving: cannot load the model at AIP_STORAGE_URI={tmp_path / 'no-model'}: ")
    assert "\n" not in record.getMessage()


def test_a_client_resetting_mid_request_is_one_log_line(server, capsys):
    import struct

    with socket.create_connection(server.server_address, timeout=5) as connection:
        connection.sendall(b"POST /predict HTTP/1.1\r\nContent-Le")
        time.sleep(0.1)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    time.sleep(0.3)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert exchange(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


def test_the_settings_are_one_pydantic_model_read_from_vertexs_variables():
    from components.serving.settings import ServingSettings

    settings = ServingSettings.from_environment({"AIP_STORAGE_URI": " gs://b/model ", "AIP_HTTP_PORT": "9000",
                                                 "AIP_PREDICT_ROUTE": "/v1/predict", "UNRELATED": "x"})
    assert (settings.storage_uri, settings.http_port, settings.predict_route, settings.health_route) == (
        "gs://b/model", 9000, "/v1/predict", "/health")
    assert ServingSettings.from_environment({"AIP_STORAGE_URI": "m"}).http_port == 8080
    with pytest.raises(ValueError, match=r"^AIP_STORAGE_URI is not set"):
        ServingSettings.from_environment({"AIP_STORAGE_URI": "  "})
