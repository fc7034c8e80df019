"""The prediction server of the `serving` image: adrank's serving SavedModel on the training TensorFlow.

Vertex AI's prebuilt TensorFlow prediction containers stop at TF 2.15, older than the TensorFlow that
trains and exports the model, so the Model Registry's serving image is built from this repository's
cpu lock instead (Dockerfile target `serving`). It follows Vertex's custom-container contract: Vertex
sets `AIP_HTTP_PORT`, `AIP_HEALTH_ROUTE`, `AIP_PREDICT_ROUTE` and `AIP_STORAGE_URI` (the model
directory; TensorFlow reads `gs://` itself). Requests use TF Serving's JSON row format for the
`serving_default` signature, which takes serialized raw tf.Examples:

    {"instances": [{"b64": "<base64 of a serialized tf.Example>"}, ...]}
    -> {"predictions": [{"<task>": <probability>, ...}, ...]}
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIGNATURE = "serving_default"
INPUT = "examples"


class BadRequest(ValueError):
    """A request the server answers with 400 and this message."""


def serialized_examples(body: bytes) -> list[bytes]:
    """The serialized tf.Examples of a `{"instances": [{"b64": ...}]}` request body."""
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadRequest(f"request body is not JSON: {error}") from None
    instances = request.get("instances") if isinstance(request, dict) else None
    if not isinstance(instances, list) or not instances:
        raise BadRequest('request needs a non-empty "instances" list')
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

    def __init__(self, model_dir: str):
        import tensorflow as tf

        self._tf = tf
        self.model_dir = model_dir
        self._loaded = tf.saved_model.load(model_dir)
        if SIGNATURE not in self._loaded.signatures:
            raise ValueError(f"{model_dir}: the SavedModel has no '{SIGNATURE}' signature")
        self._signature = self._loaded.signatures[SIGNATURE]

    def predict(self, examples: list[bytes]) -> list[dict[str, float]]:
        try:
            outputs = self._signature(**{INPUT: self._tf.constant(examples, dtype=self._tf.string)})
        except (self._tf.errors.InvalidArgumentError, ValueError) as error:
            message = getattr(error, "message", str(error)).strip().splitlines()[0]
            raise BadRequest(f"the model rejected the examples: {message}") from None
        columns = {task: values.numpy().reshape(-1).tolist() for task, values in outputs.items()}
        return [{task: float(values[row]) for task, values in columns.items()} for row in range(len(examples))]


def make_server(predictor: Predictor, port: int, predict_route: str, health_route: str,
                host: str = "0.0.0.0") -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: HTTPStatus, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path == health_route:
                self._answer(HTTPStatus.OK, {"status": "ready", "model": predictor.model_dir})
            else:
                self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path}"})

        def do_POST(self):  # noqa: N802
            if self.path != predict_route:
                self._answer(HTTPStatus.NOT_FOUND, {"error": f"no route {self.path}"})
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                predictions = predictor.predict(serialized_examples(body))
            except BadRequest as error:
                self._answer(HTTPStatus.BAD_REQUEST, {"error": str(error)})
                return
            self._answer(HTTPStatus.OK, {"predictions": predictions})

        def log_message(self, format, *args):  # one line per request on stderr, as Vertex logs it
            print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)

    return ThreadingHTTPServer((host, port), Handler)


def main() -> int:
    model_dir = os.environ.get("AIP_STORAGE_URI")
    if not model_dir:
        print("serving: AIP_STORAGE_URI is not set (Vertex sets it to the model's artifact directory)")
        return 2
    port = int(os.environ.get("AIP_HTTP_PORT", "8080"))
    predict_route = os.environ.get("AIP_PREDICT_ROUTE", "/predict")
    health_route = os.environ.get("AIP_HEALTH_ROUTE", "/health")
    try:
        predictor = Predictor(model_dir)
    except (OSError, ValueError) as error:
        print(f"serving: cannot load the model at AIP_STORAGE_URI={model_dir}: {str(error).strip().splitlines()[0]}")
        return 2
    server = make_server(predictor, port, predict_route, health_route)
    print(f"serving {model_dir} on :{port} (predict {predict_route}, health {health_route})", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
