"""A stand-in for the Vertex AI v1 REST API on 127.0.0.1: records every request, answers like Vertex.

The real `google-cloud-aiplatform` client talks to it (REST transport, anonymous credentials), so the
tests check what the client actually sends. Every request body is parsed strictly as the
`google.cloud.aiplatform_v1` message its route takes (unknown fields, wrong types and bad enum values
are a 400 INVALID_ARGUMENT, as from Vertex), and an `updateMask` may name only fields of the resource,
so the double cannot drift from the API. Pipeline jobs advance one scripted state per GET.

Schedules start runs the way Vertex's do (`fire_schedule`): the run is the schedule's
`createPipelineJobRequest.pipelineJob` (its labels included) under a name Vertex chooses, not the
submitted display name (the SDK cannot set it, googleapis/python-aiplatform#5086; the double uses
`<schedule display name>-<yyyymmddhhmmss>`), with `scheduleName` set. Listing pipeline jobs applies the
`filter` the way Vertex documents it for the fields adrank sends (`labels.KEY`, `schedule_name`,
`display_name`, joined by AND); any other filter is a 400, so a filter the double does not know fails.

On top of parsing, the double enforces the API's documented rules for the requests adrank sends (a broken rule is
a 400 INVALID_ARGUMENT, recorded in `rejected`):
- `schedules.patch` (UpdateScheduleRequest.schedule, cloud.google.com/vertex-ai/docs/reference/rest/v1/
  projects.locations.schedules/patch and the v1 `UpdateScheduleRequest` reference): "The non-empty fields cannot be
  unset" — a field named in `updateMask` must carry a value when the schedule has one; "The scheduled request type
  cannot be changed"; output-only fields are ignored.
- `Schedule.cron` (projects.locations.schedules#Schedule): a cron tab, optionally prefixed "CRON_TZ=${IANA_TIME_ZONE}"
  or "TZ=${IANA_TIME_ZONE}"; `maxConcurrentRunCount` is required on create.
- `pipelineJobs.create` `pipelineJobId` (projects.locations.pipelineJobs/create): "less than 128 characters, and
  valid characters are /[a-z][0-9]-/" with a letter first, as `[a-z][-a-z0-9]{0,127}`.
- `PipelineJob.labels` (projects.locations.pipelineJobs#PipelineJob), also inside a schedule's
  `createPipelineJobRequest`: "Label keys and values can be no longer than 64 characters (Unicode codepoints), can
  only contain lowercase letters, numeric characters, underscores and dashes"; keys start with a letter (the GCP
  label rule); at most 64 labels.

The Model Registry keeps every version of a model (`versionId` "1", "2", ...); exactly one carries the
`default` alias. Getting `models/ID` answers the default version, `models/ID@N` (or `@alias`) that version;
listing models answers each model's default version, as Vertex does (filter: `display_name="..."` only);
`models/ID:listVersions` answers every version (no filter: adrank filters versions by label itself).
Uploading a version whose `versionAliases` hold "default" moves the alias to it; a model's first version is
its default whatever it asks; `modelId` names a new model (documented: `[a-z0-9_-]`, up to 63, not starting
with a digit or '-'). Upload is a long-running operation: the POST answers it not done, and the SDK's poll (a
GET on `/ui/{operation name}`, the first rule of its REST operations client) answers it done.

An alias names one version of a model (documented for MergeVersionAliases and Model.version_aliases: "A
version alias ... must be unique within a model"): adding an alias another version holds, by upload or by
`:mergeVersionAliases`, is a 400 naming the holder; `-alias` removes one; `default` cannot be removed or set
there. UpdateModel (PATCH `models/ID@N`) changes the fields its `updateMask` names. Evaluations are imported
and listed per version.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

from google.cloud import aiplatform_v1
from google.protobuf import json_format

TIME = "2026-03-02T11:00:00.000000Z"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict
    body: dict | None


@dataclass
class JobScript:
    """The states a job goes through, one per GET: (pipeline state, {task name: task state})."""

    steps: list[tuple[str, dict[str, str]]]
    error: str = ""


@dataclass
class FakeVertex:
    project: str
    region: str
    requests: list[Recorded] = field(default_factory=list)
    pipeline_jobs: dict[str, dict] = field(default_factory=dict)
    scripts: dict[str, JobScript] = field(default_factory=dict)
    # task name → the Metrics artifact a task of that name writes (instead of the default figures)
    task_metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    default_script: JobScript | None = None
    schedules: dict[str, dict] = field(default_factory=dict)
    contexts: dict[str, dict] = field(default_factory=dict)
    context_children: dict[str, list[str]] = field(default_factory=dict)
    models: dict[str, list[dict]] = field(default_factory=dict)  # model id → its versions, oldest first
    operations: dict[str, dict] = field(default_factory=dict)  # operation name → the operation when done
    evaluations: dict[str, list[dict]] = field(default_factory=dict)  # "model id@version" → its evaluations
    failures: list[tuple[str, str, int]] = field(default_factory=list)  # (method, path regex, status), used once
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, why) of 400s from parsing
    # Vertex makes a job's run context asynchronously; False: jobs are created without one (it never comes)
    run_contexts: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    def script_jobs(self, steps: list[tuple[str, dict[str, str]]], error: str = "") -> None:
        """Every job created from now on goes through `steps` (the last one repeats)."""
        self.default_script = JobScript(list(steps), error)

    def fire_schedule(self, schedule_id: str, when: str) -> str:
        """Start one run of schedule `schedule_id` at RFC 3339 time `when`, as Vertex does; returns the job id."""
        with self.lock:
            schedule = self.schedules[schedule_id]
            if schedule.get("state") != "ACTIVE":
                raise RuntimeError(f"schedule {schedule_id} is {schedule.get('state')}: Vertex starts no run")
            request = schedule["createPipelineJobRequest"]
            stamp = dt.datetime.fromisoformat(when.replace("Z", "+00:00")).strftime("%Y%m%d%H%M%S")
            spec_name = request["pipelineJob"]["pipelineSpec"]["pipelineInfo"]["name"]
            job_id = f"{spec_name}-{stamp}"
            job = copy.deepcopy(request["pipelineJob"])
            job.update(displayName=f"{schedule['displayName']}-{stamp}", scheduleName=schedule["name"])
            self._add_job(self.project, self.region, job_id, job, when)
            schedule["startedRunCount"] = str(int(schedule.get("startedRunCount", "0")) + 1)
            schedule["lastScheduledRunResponse"] = {"scheduledRunTime": when,
                                                    "runResponse": self.pipeline_jobs[job_id]["name"]}
            return job_id

    def model_versions(self, model_id: str) -> list[dict]:
        return self.models[model_id]

    def default_version(self, model_id: str) -> dict:
        (default,) = [v for v in self.models[model_id] if "default" in v.get("versionAliases", [])]
        return default

    def calls(self, method: str, pattern: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # -- request handling -------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, body: dict | None) -> tuple[int, dict]:
        with self.lock:
            self.requests.append(Recorded(method, path, query, body))
            for index, (fail_method, pattern, status) in enumerate(self.failures):
                if fail_method == method and re.search(pattern, path):
                    del self.failures[index]
                    return status, _error(status, "injected transient failure")
            path = path.removeprefix("/v1/")
            for route_method, pattern, handler, body_type in self._routes():
                match = re.fullmatch(pattern, path)
                if route_method == method and match:
                    problem = _strict_problem(body_type, body, query)
                    if problem:
                        self.rejected.append((method, path, problem))
                        return 400, _error(400, f"Invalid JSON payload received. {problem}")
                    return handler(*match.groups(), query=query, body=body)
            return 404, _error(404, f"no route for {method} {path}")

    def _routes(self):
        """(method, path pattern, handler, the aiplatform_v1 message the body must parse as, or None: no body)."""
        loc = r"projects/([^/]+)/locations/([^/]+)"
        v1 = aiplatform_v1
        return [
            ("POST", loc + r"/pipelineJobs", self._create_job, v1.PipelineJob),
            ("GET", loc + r"/pipelineJobs", self._list_jobs, None),
            ("GET", loc + r"/pipelineJobs/([^/:]+)", self._get_job, None),
            ("POST", loc + r"/schedules", self._create_schedule, v1.Schedule),
            ("GET", loc + r"/schedules", self._list_schedules, None),
            ("GET", loc + r"/schedules/([^/:]+)", self._get_schedule, None),
            ("PATCH", loc + r"/schedules/([^/:]+)", self._patch_schedule, v1.Schedule),
            ("POST", loc + r"/schedules/([^/:]+):pause", self._pause_schedule, v1.PauseScheduleRequest),
            ("POST", loc + r"/schedules/([^/:]+):resume", self._resume_schedule, v1.ResumeScheduleRequest),
            ("DELETE", loc + r"/schedules/([^/:]+)", self._delete_schedule, None),
            ("GET", loc + r"/metadataStores/([^/:]+)", self._get_store, None),
            ("POST", loc + r"/metadataStores/([^/:]+)/contexts", self._create_context, v1.Context),
            ("GET", loc + r"/metadataStores/([^/:]+)/contexts/([^/:]+)", self._get_context, None),
            ("PATCH", loc + r"/metadataStores/([^/:]+)/contexts/([^/:]+)", self._patch_context, v1.Context),
            ("POST", loc + r"/metadataStores/([^/:]+)/contexts/([^/:]+):addContextChildren", self._add_children,
             v1.AddContextChildrenRequest),
            ("GET", loc + r"/metadataStores/([^/:]+)/contexts", self._list_contexts, None),
            ("GET", loc + r"/models", self._list_models, None),
            ("GET", loc + r"/models/([^/:]+)", self._get_model, None),
            ("PATCH", loc + r"/models/([^/:]+)", self._update_model, v1.Model),
            ("GET", loc + r"/models/([^/:]+):listVersions", self._list_versions, None),
            ("POST", loc + r"/models/([^/:]+):mergeVersionAliases", self._merge_aliases,
             v1.MergeVersionAliasesRequest),
            ("POST", loc + r"/models:upload", self._upload_model, v1.UploadModelRequest),
            ("GET", r"(?:/ui/)?" + loc + r"/models/([^/:]+)/operations/([^/:]+)", self._get_operation, None),
            ("POST", loc + r"/models/([^/:]+)/evaluations:import", self._import_evaluation,
             v1.ImportModelEvaluationRequest),
            ("GET", loc + r"/models/([^/:]+)/evaluations", self._list_evaluations, None),
        ]

    # -- pipeline jobs ----------------------------------------------------------------------------
    def _create_job(self, project, region, query, body):
        given = query.get("pipelineJobId")
        job_id = given[0] if given else f"job-{uuid.uuid4().hex[:12]}"  # Vertex names a job sent without an id
        problem = (_job_id_problem(job_id) if given else "") or _labels_problem((body or {}).get("labels", {}))
        if problem:
            return self._reject("POST", f"pipelineJobs/{job_id}", problem)
        name = f"projects/{project}/locations/{region}/pipelineJobs/{job_id}"
        if job_id in self.pipeline_jobs:
            return 409, _error(409, f"PipelineJob {name} already exists")
        return 200, self._add_job(project, region, job_id, copy.deepcopy(body), TIME)

    def _add_job(self, project, region, job_id, job, create_time):
        job.update(name=f"projects/{project}/locations/{region}/pipelineJobs/{job_id}",
                   state="PIPELINE_STATE_PENDING", createTime=create_time, updateTime=create_time)
        job["jobDetail"] = {}
        if self.run_contexts:
            run_context = self._store_context(project, region, "default", job_id, "system.PipelineRun", job_id)
            job["jobDetail"] = {"pipelineRunContext": self.contexts[run_context],
                                "pipelineContext": self.contexts[run_context]}
        self.pipeline_jobs[job_id] = job
        return job

    def _get_job(self, project, region, job_id, query, body):
        job = self.pipeline_jobs.get(job_id)
        if job is None:
            return 404, _error(404, f"PipelineJob {job_id} not found")
        script = self.scripts.get(job_id)
        if script is None and self.default_script is not None:
            script = self.scripts[job_id] = JobScript(list(self.default_script.steps), self.default_script.error)
        if script and script.steps:
            state, tasks = script.steps.pop(0) if len(script.steps) > 1 else script.steps[0]
            job["state"] = state
            job["jobDetail"]["taskDetails"] = [_task(i, name, task_state, job, self.task_metrics.get(name))
                                               for i, (name, task_state) in enumerate(tasks.items(), start=1)]
            if state == "PIPELINE_STATE_FAILED" and script.error:
                job["error"] = {"code": 9, "message": script.error}
            if state in ("PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED"):
                job["endTime"] = TIME
        return 200, job

    def _list_jobs(self, project, region, query, body):
        try:
            wanted = _job_filter((query.get("filter") or [""])[0])
        except ValueError as error:
            return 400, _error(400, str(error))
        jobs = [job for job in self.pipeline_jobs.values() if all(_job_field(job, f) == v for f, v in wanted)]
        return 200, {"pipelineJobs": sorted(jobs, key=lambda job: job["createTime"], reverse=True)}

    # -- schedules --------------------------------------------------------------------------------
    def _reject(self, method: str, path: str, problem: str) -> tuple[int, dict]:
        self.rejected.append((method, path, problem))
        return 400, _error(400, problem)

    def _create_schedule(self, project, region, query, body):
        problem = _schedule_problem(body or {})
        if not problem and "maxConcurrentRunCount" not in (body or {}):
            problem = "Schedule.max_concurrent_run_count is required"
        if problem:
            return self._reject("POST", "schedules", problem)
        schedule_id = str(1000 + len(self.schedules) + 1)
        schedule = copy.deepcopy(body)
        schedule.update(name=f"projects/{project}/locations/{region}/schedules/{schedule_id}", state="ACTIVE",
                        createTime=TIME, updateTime=TIME, nextRunTime=TIME)
        self.schedules[schedule_id] = schedule
        return 200, schedule

    def _list_schedules(self, project, region, query, body):
        schedules = list(self.schedules.values())
        wanted = re.search(r'display_name="([^"]+)"', (query.get("filter") or [""])[0])
        if wanted:
            schedules = [s for s in schedules if s.get("displayName") == wanted.group(1)]
        return 200, {"schedules": schedules}

    def _get_schedule(self, project, region, schedule_id, query, body):
        if schedule_id not in self.schedules:
            return 404, _error(404, f"Schedule {schedule_id} not found")
        return 200, self.schedules[schedule_id]

    def _patch_schedule(self, project, region, schedule_id, query, body):
        schedule = self.schedules.get(schedule_id)
        if schedule is None:
            return 404, _error(404, f"Schedule {schedule_id} not found")
        mask = (query.get("updateMask") or [""])[0]
        keys = [_camel(path) for path in filter(None, mask.split(","))]
        unset = [key for key in keys if key not in _OUTPUT_ONLY and _empty(body.get(key)) and not _empty(schedule.get(key))]
        problem = (f"The non-empty fields cannot be unset: {', '.join(unset)}" if unset
                   else _schedule_problem({key: body[key] for key in keys if key in body}))
        if not problem and any(key in body for key in _REQUEST_TYPES if key not in schedule):
            problem = "The scheduled request type cannot be changed"
        if problem:
            return self._reject("PATCH", f"schedules/{schedule_id}", problem)
        for key in keys:
            if key in _OUTPUT_ONLY:
                continue
            if not _empty(body.get(key)):
                schedule[key] = body[key]
        schedule["updateTime"] = TIME
        return 200, schedule

    def _pause_schedule(self, project, region, schedule_id, query, body):
        return self._set_schedule_state(schedule_id, "PAUSED")

    def _resume_schedule(self, project, region, schedule_id, query, body):
        status, payload = self._set_schedule_state(schedule_id, "ACTIVE")
        if status == 200:
            self.schedules[schedule_id]["catchUp"] = bool((body or {}).get("catchUp", False))
        return status, payload

    def _set_schedule_state(self, schedule_id, state):
        if schedule_id not in self.schedules:
            return 404, _error(404, f"Schedule {schedule_id} not found")
        self.schedules[schedule_id]["state"] = state
        return 200, {}

    def _delete_schedule(self, project, region, schedule_id, query, body):
        if self.schedules.pop(schedule_id, None) is None:
            return 404, _error(404, f"Schedule {schedule_id} not found")
        return 200, {"name": f"projects/{project}/locations/{region}/operations/{uuid.uuid4().int % 10**12}",
                     "done": True, "response": {"@type": "type.googleapis.com/google.protobuf.Empty"}}

    # -- metadata (experiments) -------------------------------------------------------------------
    def _get_store(self, project, region, store, query, body):
        return 200, {"name": f"projects/{project}/locations/{region}/metadataStores/{store}", "createTime": TIME}

    def _store_context(self, project, region, store, context_id, schema, display_name, metadata=None):
        name = f"projects/{project}/locations/{region}/metadataStores/{store}/contexts/{context_id}"
        self.contexts[name] = {"name": name, "displayName": display_name, "schemaTitle": schema,
                               "schemaVersion": "0.0.1", "metadata": metadata or {}, "createTime": TIME,
                               "updateTime": TIME, "etag": "1"}
        return name

    def _create_context(self, project, region, store, query, body):
        context_id = (query.get("contextId") or [uuid.uuid4().hex[:12]])[0]
        name = f"projects/{project}/locations/{region}/metadataStores/{store}/contexts/{context_id}"
        if name in self.contexts:
            return 409, _error(409, f"Context {name} already exists")
        self._store_context(project, region, store, context_id, body.get("schemaTitle", ""),
                            body.get("displayName", context_id), body.get("metadata"))
        return 200, self.contexts[name]

    def _get_context(self, project, region, store, context_id, query, body):
        name = f"projects/{project}/locations/{region}/metadataStores/{store}/contexts/{context_id}"
        if name not in self.contexts:
            return 404, _error(404, f"Context {name} not found")
        return 200, self.contexts[name]

    def _patch_context(self, project, region, store, context_id, query, body):
        name = f"projects/{project}/locations/{region}/metadataStores/{store}/contexts/{context_id}"
        self.contexts[name].update({k: v for k, v in body.items() if k != "name"})
        return 200, self.contexts[name]

    def _add_children(self, project, region, store, context_id, query, body):
        name = f"projects/{project}/locations/{region}/metadataStores/{store}/contexts/{context_id}"
        children = self.context_children.setdefault(name, [])
        for child in body.get("childContexts", []):
            if child not in self.contexts:
                return 404, _error(404, f"Context {child} not found")
            if child not in children:  # documented: children already added are skipped
                children.append(child)
        return 200, {}

    def _list_contexts(self, project, region, store, query, body):
        return 200, {"contexts": list(self.contexts.values())}

    # -- model registry ---------------------------------------------------------------------------
    def _model_version(self, project, region, model_ref) -> tuple[int, dict]:
        """`model_ref`: `ID`, `ID@versionId` or `ID@alias` (the `@` possibly percent-encoded)."""
        model_id, _, version = unquote(model_ref).partition("@")
        name = f"projects/{project}/locations/{region}/models/{model_id}"
        if model_id not in self.models:
            return 404, _error(404, f"Model {name} not found")
        version = version or "default"
        for held in self.models[model_id]:
            if held["versionId"] == version or version in held.get("versionAliases", []):
                return 200, held
        return 404, _error(404, f"Model {name}@{version} not found")

    def _list_models(self, project, region, query, body):
        text = (query.get("filter") or [""])[0]
        match = re.fullmatch(r'\s*display_name\s*=\s*"([^"]*)"\s*', text) if text else None
        if text and not match:
            return 400, _error(400, f"Invalid filter (the double knows display_name=\"...\"): {text}")
        defaults = [self.default_version(model_id) for model_id in self.models]
        return 200, {"models": [m for m in defaults if match is None or m["displayName"] == match.group(1)]}

    def _get_model(self, project, region, model_ref, query, body):
        return self._model_version(project, region, model_ref)

    def _list_versions(self, project, region, model_id, query, body):
        if model_id not in self.models:
            return 404, _error(404, f"Model {model_id} not found")
        return 200, {"models": self.models[model_id]}

    def _update_model(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        for path in filter(None, (query.get("updateMask") or [""])[0].split(",")):
            key = _camel(path)
            version[key] = copy.deepcopy(body.get(key))
        return 200, version

    def _alias_holder(self, model_id: str, alias: str, other_than: str) -> str | None:
        holders = [v["versionId"] for v in self.models[model_id]
                   if alias in v.get("versionAliases", []) and v["versionId"] != other_than]
        return holders[0] if holders else None

    def _merge_aliases(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        model_id = unquote(model_ref).partition("@")[0]
        changes = body.get("versionAliases", [])
        for alias in changes:
            name = alias.removeprefix("-")
            if name == "default":
                return self._reject("POST", f"models/{model_ref}:mergeVersionAliases",
                                    "the default alias is set by upload or by making a version the default")
            holder = None if alias.startswith("-") else self._alias_holder(model_id, name, version["versionId"])
            if holder is not None:
                return self._reject("POST", f"models/{model_ref}:mergeVersionAliases",
                                    f"alias {name} is already used by version {holder}")
        for alias in changes:
            aliases = version.setdefault("versionAliases", [])
            if alias.startswith("-"):
                version["versionAliases"] = [a for a in aliases if a != alias[1:]]
            elif alias not in aliases:
                aliases.append(alias)
        return 200, version

    def _upload_model(self, project, region, query, body):
        parent = body.get("parentModel")
        model = copy.deepcopy(body["model"])
        if parent:
            match = re.fullmatch(rf"projects/{project}/locations/{region}/models/([^/@]+)", parent)
            if match is None or match.group(1) not in self.models:
                return 404, _error(404, f"parent model {parent} not found")
            model_id = match.group(1)
            versions = self.models[model_id]
        else:
            model_id = body.get("modelId") or str(4000 + len(self.models) + 1)
            if not _MODEL_ID.match(model_id):
                return self._reject("POST", "models:upload", f"model_id '{model_id}' must match {_MODEL_ID.pattern}")
            if model_id in self.models:
                return 409, _error(409, f"Model {model_id} already exists")
            versions = self.models[model_id] = []
        aliases = list(model.get("versionAliases", []))
        for alias in aliases:
            holder = self._alias_holder(model_id, alias, "") if alias != "default" else None
            if holder is not None:
                if not versions:
                    del self.models[model_id]
                return self._reject("POST", "models:upload", f"alias {alias} is already used by version {holder}")
        if not versions and "default" not in aliases:  # a model's first version is its default
            aliases.append("default")
        if "default" in aliases:
            for held in versions:
                held["versionAliases"] = [a for a in held.get("versionAliases", []) if a != "default"]
        name = f"projects/{project}/locations/{region}/models/{model_id}"
        version_id = str(len(versions) + 1)
        model.update(name=name, versionId=version_id, versionAliases=aliases, createTime=TIME, updateTime=TIME,
                     versionCreateTime=TIME, versionUpdateTime=TIME)
        versions.append(model)
        operation = f"{name}/operations/{uuid.uuid4().int % 10**12}"
        metadata = {"@type": "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelOperationMetadata",
                    "genericMetadata": {"createTime": TIME, "updateTime": TIME}}
        self.operations[operation] = {"name": operation, "metadata": metadata, "done": True, "response": {
            "@type": "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelResponse",
            "model": name, "modelVersionId": version_id}}
        return 200, {"name": operation, "metadata": metadata}  # not done yet: the client polls it

    def _get_operation(self, project, region, model_id, operation_id, query, body):
        name = f"projects/{project}/locations/{region}/models/{model_id}/operations/{operation_id}"
        if name not in self.operations:
            return 404, _error(404, f"Operation {name} not found")
        return 200, self.operations[name]

    def _import_evaluation(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        key = f"{unquote(model_ref).partition('@')[0]}@{version['versionId']}"
        held = self.evaluations.setdefault(key, [])
        evaluation = copy.deepcopy(body["modelEvaluation"])
        evaluation.update(name=f"{version['name']}/evaluations/{len(held) + 1}", createTime=TIME)
        held.append(evaluation)
        return 200, evaluation

    def _list_evaluations(self, project, region, model_ref, query, body):
        status, version = self._model_version(project, region, model_ref)
        if status != 200:
            return status, version
        key = f"{unquote(model_ref).partition('@')[0]}@{version['versionId']}"
        return 200, {"modelEvaluations": self.evaluations.get(key, [])}


def _task(index: int, name: str, state: str, job: dict, metrics: dict[str, float] | None = None) -> dict:
    task = {"taskId": str(index), "taskName": name, "state": state, "createTime": TIME, "parentTaskId": "0"}
    if metrics is not None:
        task["outputs"] = {"metrics": {"artifacts": [{
            "name": f"{job['name']}/artifacts/{index}", "displayName": "metrics", "schemaTitle": "system.Metrics",
            "uri": f"gs://bucket/root/{index}/metrics", "metadata": metrics}]}}
    elif name.startswith("train") or name == "report":
        task["outputs"] = {"metrics": {"artifacts": [{
            "name": f"{job['name']}/artifacts/{index}", "displayName": "metrics", "schemaTitle": "system.Metrics",
            "uri": f"gs://bucket/root/{index}/metrics", "metadata": {"engagement_logloss": 0.4 + index / 1000,
                                                                       "engagement_auc": 0.7}}]}}
    return task


# The documented formats (see the module docstring).
_JOB_ID = re.compile(r"^[a-z][-a-z0-9]{0,127}$")
_MODEL_ID = re.compile(r"^[a-z_][a-z0-9_-]{0,62}$")
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,64}$")
_MAX_LABELS = 64
_CRON = re.compile(r"^(?:(?:CRON_TZ|TZ)=[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)* )?\S+ \S+ \S+ \S+ \S+$")
_OUTPUT_ONLY = {"name", "state", "createTime", "updateTime", "nextRunTime", "lastPauseTime", "lastResumeTime",
                "startedRunCount", "lastScheduledRunResponse", "catchUp"}
_REQUEST_TYPES = ("createPipelineJobRequest", "createNotebookExecutionJobRequest")


def _empty(value) -> bool:
    """Unset in proto3 JSON: absent, or the type's default (what a client sends for a field it leaves empty)."""
    return value in (None, "", 0, False, [], {}, "0")


def _job_id_problem(job_id: str) -> str:
    if not _JOB_ID.match(job_id):
        return f"pipeline_job_id '{job_id}' must match [a-z][-a-z0-9]{{0,127}}"
    return ""


def _labels_problem(labels: dict) -> str:
    if len(labels) > _MAX_LABELS:
        return f"{len(labels)} labels, over {_MAX_LABELS}"
    for key, value in labels.items():
        if not _LABEL_KEY.match(key):
            return f"label key '{key}' is invalid (lowercase letters, digits, '_' and '-', a letter first, ≤64)"
        if not _LABEL_VALUE.match(value):
            return f"label value '{value}' of '{key}' is invalid (lowercase letters, digits, '_' and '-', ≤64)"
    return ""


def _schedule_problem(schedule: dict) -> str:
    """What a Schedule (or the fields of one an update sends) breaks of the documented rules, "" when nothing."""
    if "cron" in schedule and not _CRON.match(schedule["cron"]):
        return f"cron '{schedule['cron']}' is not a cron tab ([CRON_TZ=|TZ=<IANA zone> ]m h dom mon dow)"
    job = schedule.get("createPipelineJobRequest", {}).get("pipelineJob", {})
    return _labels_problem(job.get("labels", {}))


_FILTER_TERM = re.compile(r'^(display_name|schedule_name|labels\.[a-z][a-z0-9_-]*)\s*=\s*"([^"]*)"$')


def _job_filter(text: str) -> list[tuple[str, str]]:
    """(field, value) pairs of a pipeline-job list filter: `field="value"` terms joined by AND."""
    terms = []
    for term in filter(None, (part.strip() for part in text.split(" AND "))):
        match = _FILTER_TERM.match(term)
        if not match:
            raise ValueError(f"Invalid filter (the double knows display_name, schedule_name, labels.KEY): {term}")
        terms.append((match.group(1), match.group(2)))
    return terms


def _job_field(job: dict, field: str) -> str:
    if field.startswith("labels."):
        return job.get("labels", {}).get(field.removeprefix("labels."))
    return job.get(_camel(field), "")


def _strict_problem(body_type, body: dict | None, query: dict) -> str:
    """Why `body` (and an `updateMask`) is not a valid `body_type` request, or "" when it is."""
    if body_type is None:
        return "a body was sent to a method that takes none" if body else ""
    message = body_type.pb(body_type())
    try:
        json_format.ParseDict(body or {}, message, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        return f"{body_type.__name__}: {error}"
    fields = {f.json_name for f in message.DESCRIPTOR.fields} | {f.name for f in message.DESCRIPTOR.fields}
    for path in filter(None, (query.get("updateMask") or [""])[0].split(",")):
        if path.split(".")[0] not in fields:
            return f"updateMask names '{path}', which is not a field of {body_type.__name__}"
    return ""


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _error(status: int, message: str) -> dict:
    names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ALREADY_EXISTS",
             429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
    return {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeVertex

    def _serve(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        status, payload = self.server.fake.handle(method, url.path, parse_qs(url.query), body)  # type: ignore[attr-defined]
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_PATCH(self):
        self._serve("PATCH")

    def do_DELETE(self):
        self._serve("DELETE")

    def log_message(self, *args):  # keep test output quiet
        pass


class FakeVertexServer:
    """`with FakeVertexServer(fake) as endpoint:` serves `fake` on 127.0.0.1 until the block ends."""

    def __init__(self, fake: FakeVertex):
        self.fake = fake
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = fake  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
