"""The prediction server under abuse: every malformed framing gets an HTTP status, bodies and instances are capped,
slow clients time out, connections are bounded, and instances are checked against the serving signature."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time

import pytest

from components.images.serving import Predictor, ServingLimits, make_server

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


def exchange(server, raw: bytes, then_wait: float = 0.0) -> tuple[int, dict]:
    """Send `raw` on a fresh connection and read the answer until the server closes it."""
    with socket.create_connection(server.server_address, timeout=10) as connection:
        connection.sendall(raw)
        if then_wait:
            time.sleep(then_wait)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else {}


def post(body: bytes, headers: str | None = None) -> bytes:
    headers = f"Content-Length: {len(body)}\r\n" if headers is None else headers
    return f"POST /predict HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


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
    with pytest.raises(ValueError, match=r"ADRANK_MAX_CONNECTIONS='0': expected a positive number"):
        ServingLimits.from_environment({"ADRANK_MAX_CONNECTIONS": "0"})
