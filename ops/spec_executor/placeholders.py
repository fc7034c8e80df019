"""Placeholder resolution in a task's container command and args, as the Vertex driver does it.

    {{$}}                                   the executor input, JSON
    {{$.json_escape[N]}}                    the executor input, JSON, escaped N times for embedding in JSON
                                            strings (GCPC puts it in a custom job's payload, escaped once)
    {{$.inputs.parameters['x']}}            a parameter: strings raw, everything else JSON
    {{$.inputs.artifacts['x'].uri|path|metadata}}, {{$.outputs.artifacts['x'].uri|path|metadata}}
    {{$.outputs.parameters['x'].output_file}}
    {{$.pipeline_job_name}}, {{$.pipeline_job_uuid}}, {{$.pipeline_task_uuid}}, ... (`PipelineJobContext`)

A placeholder this module does not know, or one naming an input or output the task lacks, is an error
(`BrokenPlaceholder`): a spec that would fail on Vertex fails here too, before its task runs.

Parameter values are inserted as they are, so a placeholder inside a value is resolved only when it is
the escaped executor input (`{{$.json_escape[N]}}`): that is how GCPC hands a custom job's replicas their
executor input through the `worker_pool_specs` parameter. (Assumed: Vertex resolves that placeholder after
inserting the parameter; the custom-job launcher receives the replicas' args already resolved.)
Parameters left unset that are optional resolve to `null` if JSON-typed and to "" if strings (assumed:
GCPC's payload puts `reserved_ip_ranges` unquoted, so Vertex must insert valid JSON for it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable

PLACEHOLDER = re.compile(r"\{\{\$(?P<body>[^{}]*)\}\}")
JSON_ESCAPE = re.compile(r"^\.json_escape\[(?P<times>\d+)\]$")
IO_PLACEHOLDER = re.compile(
    r"^\.(?P<side>inputs|outputs)\.(?P<kind>parameters|artifacts)\['(?P<name>[^']+)'\]"
    r"(?:\.(?P<field>uri|path|metadata|output_file)(?:\['(?P<key>[^']+)'\])?)?$"
)
JSON_TYPES = {"LIST", "STRUCT", "BOOLEAN", "NUMBER_INTEGER", "NUMBER_DOUBLE"}


class BrokenPlaceholder(ValueError):
    """A placeholder that cannot be resolved for this task."""


def format_parameter(value) -> str:
    """How a parameter value appears in a command: strings as they are, the rest as JSON, whole numbers
    without a fraction (assumed: the compiled spec stores every number as a double, and GCPC's launcher
    hands the payload to proto-plus, which refuses `1.0` for an integer field, so Vertex must write `1`)."""
    if isinstance(value, str):
        return value
    return json.dumps(_whole_numbers(value))


def _whole_numbers(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    return value


def escaped_json(value: dict, times: int) -> str:
    text = json.dumps(value)
    for _ in range(times):
        text = json.dumps(text)[1:-1]
    return text


@dataclass
class PlaceholderResolver:
    task: str
    executor_input: dict
    pipeline_values: dict[str, str]
    input_parameter_types: dict[str, dict]  # the component's inputDefinitions.parameters
    local_path: Callable[[str], str]  # gs:// URI → the path a task process opens

    def resolve_command(self, parts: list) -> list[str]:
        resolved = []
        for part in parts:
            if not isinstance(part, str):
                raise BrokenPlaceholder(f"task '{self.task}': structured placeholder {json.dumps(part)[:120]} "
                                        "(Concat/IfPresent) is not supported")
            resolved.append(self.resolve(part))
        return resolved

    def resolve(self, text: str) -> str:
        return PLACEHOLDER.sub(lambda match: self._value(match.group(0), match.group("body")), text)

    def _value(self, whole: str, body: str) -> str:
        if body == "":
            return json.dumps(self.executor_input)
        escape = JSON_ESCAPE.match(body)
        if escape:
            return escaped_json(self.executor_input, int(escape.group("times")))
        if body.startswith(".pipeline_"):
            key = body[1:]
            if key not in self.pipeline_values:
                raise BrokenPlaceholder(f"task '{self.task}': unknown pipeline placeholder {whole}")
            return self.pipeline_values[key]
        io = IO_PLACEHOLDER.match(body)
        if io is None:
            raise BrokenPlaceholder(f"task '{self.task}': unknown placeholder {whole}")
        side, kind, name, field, key = io.group("side", "kind", "name", "field", "key")
        if kind == "parameters":
            return self._parameter(whole, side, name, field)
        return self._artifact(whole, side, name, field, key)

    def _parameter(self, whole: str, side: str, name: str, field: str | None) -> str:
        if side == "outputs":
            outputs = self.executor_input["outputs"].get("parameters", {})
            if name not in outputs or field != "output_file":
                raise BrokenPlaceholder(f"task '{self.task}': {whole} names no output parameter file")
            return outputs[name]["outputFile"]
        if field is not None:
            raise BrokenPlaceholder(f"task '{self.task}': {whole}: a parameter has no '.{field}'")
        values = self.executor_input["inputs"].get("parameterValues", {})
        if name in values:
            return self._embedded(format_parameter(values[name]), whole)
        definition = self.input_parameter_types.get(name)
        if definition is None:
            raise BrokenPlaceholder(f"task '{self.task}': {whole} names no input of the component")
        if not definition.get("isOptional"):
            raise BrokenPlaceholder(f"task '{self.task}': {whole} is required and has no value")
        return "null" if definition.get("parameterType") in JSON_TYPES else ""

    def _embedded(self, value: str, whole: str) -> str:
        """A parameter value as inserted: only the escaped executor input is resolved inside it."""
        def inner(match: re.Match) -> str:
            escape = JSON_ESCAPE.match(match.group("body"))
            if escape is None:
                raise BrokenPlaceholder(f"task '{self.task}': the value of {whole} holds {match.group(0)}, "
                                        "which is not resolved inside parameter values")
            return escaped_json(self.executor_input, int(escape.group("times")))

        return PLACEHOLDER.sub(inner, value)

    def _artifact(self, whole: str, side: str, name: str, field: str | None, key: str | None) -> str:
        artifacts = self.executor_input[side].get("artifacts", {})
        if name not in artifacts or not artifacts[name].get("artifacts"):
            raise BrokenPlaceholder(f"task '{self.task}': {whole} names no {side[:-1]} artifact of the task")
        artifact = artifacts[name]["artifacts"][0]
        if field == "uri" and key is None:
            return artifact["uri"]
        if field == "path" and key is None:
            return self.local_path(artifact["uri"])
        if field == "metadata":
            metadata = artifact.get("metadata", {})
            if key is None:
                return json.dumps(metadata)
            if key not in metadata:
                raise BrokenPlaceholder(f"task '{self.task}': {whole}: no metadata key '{key}'")
            return format_parameter(metadata[key])
        raise BrokenPlaceholder(f"task '{self.task}': {whole} needs .uri, .path or .metadata")
