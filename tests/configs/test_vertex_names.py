"""Every name that becomes a Vertex label, job name or experiment name is checked at config load, naming the field."""

import re
from pathlib import Path

import pytest

from configs import ConfigError, load_config

VERTEX = Path(__file__).parents[2] / "configs" / "vertex.yaml"


def _error(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as error:
        load_config(VERTEX, overrides)
    text = str(error.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("overrides, field, message", [
    # target names become the adrank-target label value
    (["targets.4.name=CPU"], "targets.4.name", "target name 'CPU': Vertex label values are lowercase"),
    (["targets.4.name=" + "c" * 64, "report.baseline_target=" + "c" * 64], "targets.4.name",
     "has 64 characters, over 63 (the Vertex label value limit)"),
    (["targets.4.name=9cpu", "report.baseline_target=9cpu"], "targets.4.name", "starting with a letter"),
    (["targets.4.name=cpu_1", "report.baseline_target=cpu_1"], "targets.4.name", "lowercase letters, digits and '-'"),
    # `<name>-train-<target>`, the training CustomJob's display name, fits 128 characters
    (["name=" + "a" * 63, "targets.4.name=" + "c" * 63, "report.baseline_target=" + "c" * 63], "targets.4.name",
     "makes a 133-character training job display name"),
    # user labels go on every pipeline job and CustomJob beside adrank's own
    (["vertex.labels={Team: ads}"], "vertex.labels", "label key 'Team': keys are lowercase letters"),
    (["vertex.labels={team: Ads}"], "vertex.labels", "label 'team' value 'Ads'"),
    (["vertex.labels={team: " + "a" * 64 + "}"], "vertex.labels", "has 64 characters, over 63"),
    (["vertex.labels={" + "k" * 64 + ": a}"], "vertex.labels", "has 64 characters; keys have 1 to 63"),
    (["vertex.labels={adrank-config: mine}"], "vertex.labels", "keys starting with 'adrank-' are set by adrank"),
    (["vertex.labels={vertex-ai-pipelines-run-billing-id: x}"], "vertex.labels", "reserved by Vertex AI Pipelines"),
    (["vertex.labels={" + ", ".join(f"k{i}: v" for i in range(59)) + "}"], "vertex.labels",
     "59 labels; a Vertex resource takes 64 and adrank adds 6 of its own, so at most 58"),
    # experiment names are Metadata context ids: 4-128 of [a-z0-9-]
    (["vertex.experiment=abc"], "vertex.experiment", "has 3 characters; Vertex Experiment names have 4 to 128"),
    (["vertex.experiment=Daily_Runs"], "vertex.experiment", "lowercase letters, digits and '-'"),
    (["vertex.experiment=" + "e" * 100], "vertex.experiment", "138-character experiment run ids, over 128"),
    # schedule and model display names: up to 128 characters
    (["vertex.schedule.display_name=" + "s" * 129], "vertex.schedule.display_name",
     "has 129 characters; Vertex display names have 1 to 128"),
    (["vertex.model_registry.model_display_name=" + "m" * 129], "vertex.model_registry.model_display_name",
     "has 129 characters"),
    (["vertex.schedule.display_name='daily \"retrain\"'"], "vertex.schedule.display_name",
     "no double quotes, backslashes or line breaks"),
    (["vertex.schedule.display_name=''"], "vertex.schedule.display_name", "has 0 characters"),
])
def test_names_vertex_would_refuse_fail_at_load_naming_the_field(overrides, field, message):
    text = _error(overrides)
    assert f"{field}: " in text
    assert message in text


def test_names_at_the_limits_load():
    config = load_config(VERTEX, [
        "name=" + "a" * 63, "targets.4.name=" + "c" * 58, "report.baseline_target=" + "c" * 58,
        "vertex.labels={" + ", ".join(f"k{i}: v" for i in range(58)) + "}",
        "vertex.experiment=" + "e" * 39, "vertex.schedule.display_name=" + "s" * 128,
    ])
    assert len(config.name) + len("-train-") + len(config.target("c" * 58).name) == 128
    assert len(config.vertex.labels) == 58
    # the longest job id (<name>-<hash8>-<yyyymmdd-hhmmss>) inside the experiment: 39 + 1 + 88 = 128
    assert len(config.vertex.experiment) + 1 + len(config.name) + 25 == 128


@pytest.mark.parametrize("network, message", [
    ("projects/adrank-prod/global/networks/adrank-vpc",
     "VPC peering needs the project NUMBER, not the project id 'adrank-prod'"),
    ("projects/123456789012/networks/adrank-vpc", "is not projects/<project-number>/global/networks/<network-name>"),
    ("projects/123456789012/global/networks/adrank-vpc/subnetworks/x", "is not projects/<project-number>/global"),
    ("https://www.googleapis.com/compute/v1/projects/123/global/networks/vpc", "is not projects/<project-number>"),
    ("projects/123456789012/global/networks/Adrank_VPC", "network name 'Adrank_VPC' is not a Compute Engine name"),
])
def test_vertex_network_must_be_the_peering_form(network, message):
    text = _error([f"vertex.network={network}"])
    assert "invalid config: vertex.network: " in text
    assert message in text


def test_the_shipped_network_is_the_peering_form():
    config = load_config(VERTEX)
    assert re.fullmatch(r"projects/\d+/global/networks/[a-z][-a-z0-9]*", config.vertex.network)
    assert load_config(VERTEX, ["vertex.network=null"]).vertex.network is None
