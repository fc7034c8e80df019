"""Beam options from config (DirectRunner locally, DataflowRunner on GCP) and the scheduled-run log window."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from apache_beam.options.pipeline_options import (
    DirectOptions,
    GoogleCloudOptions,
    StandardOptions,
    WorkerOptions,
)

from components.logs.readers import LogWindow, expand_pattern
from components.preprocess.beam_options import beam_pipeline_args, beam_pipeline_options
from configs.errors import ConfigError

DATAFLOW = {
    "runner": "DataflowRunner",
    "dataflow": {
        "project": "ads-prod", "region": "europe-west4", "temp_location": "gs://ads-tmp/beam",
        "worker_image": "europe-docker.pkg.dev/ads-prod/adrank/adrank-cpu:1.0", "machine_type": "n2-highmem-8",
        "max_workers": 64, "service_account": "beam@ads-prod.iam.gserviceaccount.com",
        "network": "ads-vpc", "subnetwork": "regions/europe-west4/subnetworks/ads", "use_public_ips": False,
    },
}


def test_dataflow_options_come_from_config(config_for):
    config = config_for(
        logs={"source": "files", "impressions": "gs://logs/i/*.jsonl", "engagements": "gs://logs/e/*.jsonl"},
        tasks=[{"name": "engagement", "event_type": "swipe"}], features=[{"name": "ad_id", "kind": "categorical"}],
        preprocess=DATAFLOW,
    )
    options = beam_pipeline_options(config)
    assert options.view_as(StandardOptions).runner == "DataflowRunner"
    cloud = options.view_as(GoogleCloudOptions)
    assert (cloud.project, cloud.region, cloud.temp_location) == ("ads-prod", "europe-west4", "gs://ads-tmp/beam")
    assert cloud.service_account_email == "beam@ads-prod.iam.gserviceaccount.com"
    assert cloud.staging_location == "gs://ads-tmp/beam/staging"
    worker = options.view_as(WorkerOptions)
    assert worker.machine_type == "n2-highmem-8" and worker.max_num_workers == 64
    assert worker.network == "ads-vpc" and worker.subnetwork.endswith("subnetworks/ads")
    assert worker.use_public_ips is False
    assert worker.sdk_container_image.endswith("adrank-cpu:1.0")
    assert "--job_name=preprocess-test-preprocess" in beam_pipeline_args(config)


def test_direct_runner_options(config_for):
    config = config_for(
        logs={"source": "synthetic"}, tasks=[{"name": "engagement", "event_type": "swipe"}],
        features=[{"name": "ad_id", "kind": "categorical"}],
        preprocess={"direct_running_mode": "multi_processing", "direct_num_workers": 2},
    )
    direct = beam_pipeline_options(config).view_as(DirectOptions)
    assert (direct.direct_running_mode, direct.direct_num_workers) == ("multi_processing", 2)


def test_dataflow_runner_without_options_fails_at_load(config_for):
    with pytest.raises(ConfigError, match="dataflow"):
        config_for(
            logs={"source": "synthetic"}, tasks=[{"name": "engagement", "event_type": "swipe"}],
            features=[{"name": "ad_id", "kind": "categorical"}], preprocess={"runner": "DataflowRunner"},
        )


def test_window_end_reads_lookback_days_of_date_partitions():
    window = LogWindow.ending_at("2026-03-10T06:00:00Z", lookback_days=2)
    assert window.contains(LogWindow.ending_at("2026-03-08T06:00:00Z", 1).end_ms)
    assert not window.contains(window.end_ms)
    assert window.dates() == [dt.date(2026, 3, 8), dt.date(2026, 3, 9), dt.date(2026, 3, 10)]
    assert expand_pattern("gs://logs/dt={date}/*.jsonl", window) == [
        "gs://logs/dt=2026-03-08/*.jsonl", "gs://logs/dt=2026-03-09/*.jsonl", "gs://logs/dt=2026-03-10/*.jsonl",
    ]
    assert expand_pattern("logs/{date}/e.jsonl", window, extra_days_after=1)[-1] == "logs/2026-03-11/e.jsonl"
    assert expand_pattern("logs/{date}/*.csv", LogWindow()) == ["logs/*/*.csv"]
    assert expand_pattern("logs/all.csv", window) == ["logs/all.csv"]


def test_the_run_window_ends_at_the_given_end_else_the_scheduled_time_else_now():
    import datetime as dt

    from components.preprocess.beam_options import launch_suffix, run_window_end

    now = dt.datetime(2026, 3, 4, 11, 0, 5, tzinfo=dt.timezone.utc)
    scheduled = "2026-03-04T03:00:00Z"
    assert run_window_end("2026-03-01T00:00:00Z", scheduled, vertex=True, now=now) == "2026-03-01T00:00:00Z"
    assert run_window_end("", scheduled, vertex=True, now=now) == scheduled
    # a run nobody scheduled: empty, or the placeholder left unresolved
    assert run_window_end("", "", vertex=True, now=now) == "2026-03-04T11:00:05Z"
    assert run_window_end("", "{{$.pipeline_job_schedule_time_utc}}", vertex=True, now=now) == "2026-03-04T11:00:05Z"
    assert run_window_end("", "", vertex=False, now=now) == ""  # `adrank run` locally: every log
    first, second = launch_suffix(now), launch_suffix(now)
    assert re.fullmatch(r"20260304-110005-[0-9a-f]{4}", first) and re.fullmatch(r"20260304-110005-[0-9a-f]{4}", second)
