"""What a prediction request is: TF Serving's JSON row format for the `serving_default` signature, which takes
serialized raw tf.Examples, framed by a Content-Length within the body cap; anything else is a `BadRequest` whose
message names the field or header at fault.

    {"instances": [{"b64": "<base64 of a serialized tf.Example>"}, ...]}

Vertex AI may add `"parameters": {...}` (this model takes none) and TF Serving clients `"signature_name"`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from http import HTTPStatus

# The top-level fields of a request body besides "instances", and what each may hold.
OPTIONAL_FIELDS = ("parameters", "signature_name")
SIGNATURE = "serving_default"
INSTANCE = '{"b64": "<base64 serialized tf.Example>"}'
# The deepest nesting of arrays and objects a request may have: the format needs 3 ({"instances": [{"b64": ..}]}).
# Deeper bodies are refused before they are decoded (the decoder recurses once per level).
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
_DEPTH_BLOCK = 1 << 20


class BadRequest(ValueError):
    """A request the server answers with `status` (400 unless said) and this message."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.status = status


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


def check_body_size(length: int, max_body_bytes: int) -> None:
    """413 for a body over the cap, decided from Content-Length alone: such a body is never read."""
    if length > max_body_bytes:
        raise BadRequest(f"request body of {length} bytes is over the limit of {max_body_bytes} "
                         "(ADRANK_MAX_BODY_BYTES)", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)


def serialized_examples(body: bytes, max_instances: int | None = None) -> list[bytes]:
    """The serialized tf.Examples of a `{"instances": [{"b64": ...}]}` request body."""
    check_json_depth(body)
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadRequest(f"request body is not JSON: {error}") from None
    except RecursionError:  # not reached after check_json_depth; a decoder bug must still be a 400, not a traceback
        raise BadRequest(f"request body nests arrays and objects too deeply (at most {MAX_JSON_DEPTH} levels)") from None
    if not isinstance(request, dict):
        raise BadRequest(f'request body: expected an object {{"instances": [...]}}, got {json_type(request)}')
    unknown = sorted(set(request) - {"instances", *OPTIONAL_FIELDS})
    if unknown:
        optional = ", ".join(f'"{field}"' for field in OPTIONAL_FIELDS)
        raise BadRequest(f'{_unknown(unknown)} in the request; expected "instances" (and optionally {optional})')
    _check_optional_fields(request)
    if "instances" not in request:
        raise BadRequest('field "instances" is missing: expected a non-empty list of ' + INSTANCE)
    instances = request["instances"]
    if not isinstance(instances, list) or not instances:
        got = "an empty list" if isinstance(instances, list) else json_type(instances)
        raise BadRequest(f'"instances": expected a non-empty list of {INSTANCE}, got {got}')
    if max_instances is not None and len(instances) > max_instances:
        raise BadRequest(f"{len(instances)} instances, more than the {max_instances} a request may carry "
                         "(ADRANK_MAX_INSTANCES); split the request", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    return [_serialized_example(index, instance) for index, instance in enumerate(instances)]


def check_json_depth(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """400 for a body whose arrays and objects nest deeper than `max_depth`, found without decoding it: strings are
    cut out (a bracket inside one is text), then the running depth over the brackets left is summed in blocks
    (numpy), so a 10 MiB body of brackets costs milliseconds and bounded memory."""
    import numpy as np

    brackets = _JSON_STRING.sub(b"", body).translate(None, delete=_NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= max_depth:
        return
    codes = np.frombuffer(brackets, dtype=np.uint8)
    depth = 0
    for start in range(0, codes.size, _DEPTH_BLOCK):
        block = codes[start:start + _DEPTH_BLOCK]
        running = depth + np.cumsum(np.where((block == ord("[")) | (block == ord("{")), 1, -1), dtype=np.int64)
        if running.max() > max_depth:
            raise BadRequest(f"request body nests arrays and objects more than {max_depth} levels deep; the "
                             "request format needs 3")
        depth = int(running[-1])


def _check_optional_fields(request: dict) -> None:
    parameters = request.get("parameters", {})
    if not isinstance(parameters, dict):
        raise BadRequest(f'"parameters": expected an object, got {json_type(parameters)}')
    if parameters:
        raise BadRequest(f'"parameters": {_unknown(sorted(parameters), "parameter")}; this model takes none')
    signature = request.get("signature_name", SIGNATURE)
    if signature != SIGNATURE:
        raise BadRequest(f'"signature_name": {json.dumps(signature)} is not served; the server serves "{SIGNATURE}"')


def _serialized_example(index: int, instance: object) -> bytes:
    where = f"instances[{index}]"
    if not isinstance(instance, dict):
        raise BadRequest(f"{where}: expected {INSTANCE}, got {json_type(instance)}")
    unknown = sorted(set(instance) - {"b64"})
    if unknown:
        raise BadRequest(f"{where}: expected {INSTANCE}; {_unknown(unknown)}")
    if "b64" not in instance:
        raise BadRequest(f'{where}: expected {INSTANCE}; field "b64" is missing')
    if not isinstance(instance["b64"], str):
        raise BadRequest(f"{where}.b64: expected a string (base64 of a serialized tf.Example), "
                         f"got {json_type(instance['b64'])}")
    try:
        return base64.b64decode(instance["b64"], validate=True)
    except binascii.Error as error:
        raise BadRequest(f"{where}.b64: not base64 ({error})") from None


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, as a message says it: an object, an array, a string, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for kind, name in ((dict, "an object"), (list, "an array"), (str, "a string"), ((int, float), "a number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _unknown(names: list[str], what: str = "field") -> str:
    """`unknown field 'a'` or `unknown fields 'a', 'b'`; long names and long lists cut, to keep one short line."""
    shown = ", ".join(repr(name[:40]) for name in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"unknown {what}{'s' if len(names) > 1 else ''} {shown}{more}"
