"""Which names Vertex AI accepts: every config value that becomes a label, a job id or display name, or an
Experiment (Metadata context) id is checked here at config load, so a bad name fails naming its field
instead of as an INVALID_ARGUMENT from Vertex hours into a daily run.

Each limit says where it comes from. *Documented* means the Google Cloud documentation or the
`google.cloud.aiplatform_v1` API reference states it; *SDK* means google-cloud-aiplatform enforces it
client-side; *assumed* means neither states it and adrank chooses the stricter reading.

- Labels (documented, "Requirements for labels", resource-manager docs; the PipelineJob reference says
  64 code points, the general page 63: the stricter 63 is used): a key is 1-63 characters, a value
  0-63; lowercase letters, digits, `_` and `-`; a key starts with a lowercase letter; at most 64 labels
  per resource. International characters are allowed by Vertex; adrank accepts ASCII only (assumed,
  so names stay valid in every other place they are used).
- Pipeline job id (SDK: `google.cloud.aiplatform.constants.pipeline._VALID_NAME_PATTERN`,
  `^[a-z][-a-z0-9]{0,127}$`): starts with a letter, at most 128 characters.
- Display names of PipelineJobs, CustomJobs, Schedules and Models (documented: "up to 128 characters
  long and can consist of any UTF-8 characters").
- Experiment names (documented: an Experiment is a Metadata Context whose id is the name, and a context
  id "must be 4-128 characters in length. Valid characters are /[a-z][0-9]-/"). Starting with a letter
  or digit is assumed (the SDK's own examples always do).
- Experiment run names (SDK: `ExperimentRun` context id is `<experiment>-<run name>`, so the two
  together, with the dash, obey the 128-character context id limit).
- Network (documented, `PipelineJob.network`: `projects/{project}/global/networks/{network}` "where
  {project} is a project number"); the network name follows Compute Engine's resource names
  (documented: 1-63 characters, `[a-z]([-a-z0-9]*[a-z0-9])?`).
"""

from __future__ import annotations

import re

LABEL_MAX = 63
LABELS_PER_RESOURCE = 64
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]*$")
# Keys adrank itself writes on every pipeline job (ops.vertex.jobs.job_labels: version, git, config,
# pipeline) and training CustomJob (pipelines.placement.custom_job_labels: pipeline, target, target kind);
# user labels with these keys would be silently overwritten.
RESERVED_LABEL_PREFIX = "adrank-"
# on a submitted job: version, git, config, pipeline, the pipeline kind and the day it reads (ops.vertex.jobs)
ADRANK_LABEL_COUNT = 6
# documented in the PipelineJob reference: a user value for this key is overridden by Vertex
VERTEX_RESERVED_LABEL_KEYS = ("vertex-ai-pipelines-run-billing-id",)

DISPLAY_NAME_MAX = 128
JOB_ID_MAX = 128
CONTEXT_ID_MIN, CONTEXT_ID_MAX = 4, 128
EXPERIMENT_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TARGET_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
NETWORK = re.compile(r"^projects/(?P<project>[^/]+)/global/networks/(?P<network>[^/]+)$")
NETWORK_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
# UploadModelRequest.model_id (documented: "up to 63 characters, and valid characters are [a-z0-9_-]. The first
# character cannot be a number or hyphen"); an id Vertex chose itself is a number, which adrank may name too.
MODEL_ID = re.compile(r"^(?:[a-z_][a-z0-9_-]{0,62}|[0-9]{1,63})$")

# The job id ops.vertex.jobs.job_id builds: `<name>-<8 hex of the config hash>-<yyyymmdd-hhmmss>`.
JOB_ID_SUFFIX_LENGTH = len("-12345678-20260302-030000")
# The CustomJob display name pipelines.placement gives a training target: `<name>-train-<target>`.
TRAINING_JOB_INFIX = "-train-"


def label_key_problem(key: str) -> str:
    """Why `key` cannot be a Vertex label key, or "" when it can."""
    if not key or len(key) > LABEL_MAX:
        return f"label key '{key}' has {len(key)} characters; keys have 1 to {LABEL_MAX}"
    if not LABEL_KEY.match(key):
        return (f"label key '{key}': keys are lowercase letters, digits, '_' and '-', "
                "starting with a lowercase letter")
    return ""


def label_value_problem(value: str, what: str = "label value") -> str:
    """Why `value` cannot be a Vertex label value, or "" when it can. `what` names the value in the message."""
    if len(value) > LABEL_MAX:
        return f"{what} '{value}' has {len(value)} characters, over {LABEL_MAX} (the Vertex label value limit)"
    if not LABEL_VALUE.match(value):
        return f"{what} '{value}': Vertex label values are lowercase letters, digits, '_' and '-'"
    return ""


def user_labels_problem(labels: dict[str, str]) -> str:
    """Why `vertex.labels` cannot go on every pipeline job beside adrank's own labels, or ""."""
    room = LABELS_PER_RESOURCE - ADRANK_LABEL_COUNT
    if len(labels) > room:
        return (f"{len(labels)} labels; a Vertex resource takes {LABELS_PER_RESOURCE} and adrank adds "
                f"{ADRANK_LABEL_COUNT} of its own, so at most {room}")
    for key, value in labels.items():
        problem = label_key_problem(key) or label_value_problem(value, f"label '{key}' value")
        if problem:
            return problem
        if key.startswith(RESERVED_LABEL_PREFIX):
            return f"label key '{key}': keys starting with '{RESERVED_LABEL_PREFIX}' are set by adrank itself"
        if key in VERTEX_RESERVED_LABEL_KEYS:
            return f"label key '{key}' is reserved by Vertex AI Pipelines"
    return ""


def experiment_name_problem(name: str) -> str:
    """Why `name` cannot be a Vertex Experiment name (a Metadata context id), or ""."""
    if not CONTEXT_ID_MIN <= len(name) <= CONTEXT_ID_MAX:
        return (f"experiment name '{name}' has {len(name)} characters; Vertex Experiment names have "
                f"{CONTEXT_ID_MIN} to {CONTEXT_ID_MAX}")
    if not EXPERIMENT_NAME.match(name):
        return (f"experiment name '{name}': lowercase letters, digits and '-', starting with a letter or digit "
                "(a Vertex Metadata context id)")
    return ""


def experiment_run_problem(experiment: str, pipeline_name: str) -> str:
    """Why runs of pipeline `pipeline_name` cannot be named inside `experiment`, or "".

    A run in an experiment is named by its pipeline job id (`<name>-<hash>-<time>`), and the SDK's
    ExperimentRun context id is `<experiment>-<run>`: both together must fit a 128-character context id."""
    longest_run = len(pipeline_name) + JOB_ID_SUFFIX_LENGTH
    total = len(experiment) + 1 + longest_run
    if total > CONTEXT_ID_MAX:
        return (f"experiment '{experiment}' ({len(experiment)} characters) with run names of pipeline "
                f"'{pipeline_name}' ({longest_run} characters) make {total}-character experiment run ids, over "
                f"{CONTEXT_ID_MAX}: shorten the experiment or the pipeline name")
    return ""


def network_problem(network: str) -> str:
    """Why `network` is not the `projects/<project number>/global/networks/<name>` VPC peering needs, or ""."""
    match = NETWORK.match(network)
    if not match:
        return (f"'{network}' is not projects/<project-number>/global/networks/<network-name>, "
                "e.g. projects/123456789012/global/networks/adrank-vpc")
    if not match["project"].isdigit():
        return (f"'{network}': VPC peering needs the project NUMBER, not the project id '{match['project']}' "
                "(gcloud projects describe PROJECT --format='value(projectNumber)')")
    if not NETWORK_NAME.match(match["network"]):
        return (f"'{network}': network name '{match['network']}' is not a Compute Engine name "
                "(1-63 lowercase letters, digits and '-', starting with a letter, not ending with '-')")
    return ""


def display_name_problem(name: str) -> str:
    """Why `name` cannot be a display name adrank looks resources up by, or "": Vertex takes up to 128 UTF-8
    characters; adrank also refuses `"`, `\\` and line breaks (assumed: it quotes the name in list filters,
    `display_name="<name>"`, and AIP-160 filter strings end at a double quote)."""
    if not name or len(name) > DISPLAY_NAME_MAX:
        return f"display name '{name}' has {len(name)} characters; Vertex display names have 1 to {DISPLAY_NAME_MAX}"
    if any(c in name for c in '"\\\n\r'):
        return f"display name {name!r}: no double quotes, backslashes or line breaks (adrank filters on it)"
    return ""


def target_name_problem(name: str) -> str:
    """Why `name` cannot name a training target, or "": it becomes the `adrank-target` label value and part of
    KFP task names and Vertex job display names, so lowercase letters, digits and '-', starting with a letter."""
    problem = label_value_problem(name, "target name")
    if problem:
        return problem
    if not TARGET_NAME.match(name):
        return f"target name '{name}': lowercase letters, digits and '-', starting with a letter"
    return ""


def training_job_name_problem(pipeline_name: str, target_name: str) -> str:
    """Why the training CustomJob display name `<pipeline>-train-<target>` would be too long, or ""."""
    length = len(pipeline_name) + len(TRAINING_JOB_INFIX) + len(target_name)
    if length > DISPLAY_NAME_MAX:
        return (f"target '{target_name}' with pipeline name '{pipeline_name}' makes a {length}-character training "
                f"job display name ('<name>{TRAINING_JOB_INFIX}<target>'), over Vertex's {DISPLAY_NAME_MAX}")
    return ""


def model_id_problem(model_id: str) -> str:
    """Why `model_id` cannot be the id of the registry model (`projects/P/locations/L/models/<id>`), or ""."""
    if not MODEL_ID.match(model_id):
        return (f"model id '{model_id}': up to 63 of lowercase letters, digits, '_' and '-', not starting with a "
                "digit or '-' (Vertex's UploadModelRequest.model_id), or the number Vertex gave an existing model")
    return ""


def model_id_from_name(name: str) -> str:
    """The model id adrank uses when the config names none: the display name in the id alphabet (lowercase, other
    characters as '-', a leading digit or '-' prefixed with 'm-', at most 63 characters)."""
    cleaned = re.sub(r"[^a-z0-9_-]", "-", name.lower())
    if not cleaned or not re.match(r"[a-z_]", cleaned[0]):
        cleaned = "m-" + cleaned
    return cleaned[:63]
