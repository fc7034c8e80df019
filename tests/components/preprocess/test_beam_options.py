"""Beam options from config (DirectRunner locally, DataflowRunner on GCP) and the scheduled-run log window."""

from __future__ import annotations

import datetime as dt
import pickle
import re

import pytest
from apache_beam.options.pipeline_options import (
    DirectOptions,
    GoogleCloudOptions,
    PipelineOptions,
    SetupOptions,
    StandardOptions,
    WorkerOptions,
)

from components.logs.readers import LogWindow, expand_pattern
from components.preprocess.beam_options import (
    StepPipelineOptions,
    beam_pipeline_args,
    beam_pipeline_options,
    step_pipeline_options,
)
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


def _option_classes() -> list[type[PipelineOptions]]:
    return [c for c in PipelineOptions.__subclasses__() if c is not StepPipelineOptions]


def test_step_options_keep_one_view_per_class_with_the_values_beam_parses(config_for):
    config = config_for(
        logs={"source": "files", "impressions": "gs://logs/i/*.jsonl", "engagements": "gs://logs/e/*.jsonl"},
        tasks=[{"name": "engagement", "event_type": "swipe"}], features=[{"name": "ad_id", "kind": "categorical"}],
        preprocess=DATAFLOW,
    )
    args = beam_pipeline_args(config) + ["--experiments=a", "--experiments=b"]
    kept, plain = step_pipeline_options(args), PipelineOptions(args)
    assert isinstance(beam_pipeline_options(config), StepPipelineOptions)
    classes = _option_classes()
    assert len(classes) > 10
    for cls in classes:
        view = kept.view_as(cls)
        assert kept.view_as(cls) is view and type(view) is cls
        fresh = plain.view_as(cls)
        assert {name: getattr(view, name) for name in view._visible_option_list()} == \
            {name: getattr(fresh, name) for name in fresh._visible_option_list()}, cls
    assert kept.get_all_options() == plain.get_all_options()


def test_a_value_set_through_a_kept_view_is_read_through_every_view():
    options = step_pipeline_options(["--runner=FnApiRunner"])
    setup = options.view_as(SetupOptions)
    assert not setup.save_main_session
    setup.save_main_session = True
    options.view_as(StandardOptions).runner = "DataflowRunner"
    assert options.view_as(SetupOptions).save_main_session is True
    assert PipelineOptions.view_as(options, SetupOptions).save_main_session is True  # a new view, as Beam makes
    assert PipelineOptions.view_as(options, StandardOptions).runner == "DataflowRunner"
    assert options.get_all_options()["save_main_session"] is True


def test_step_options_pickle_without_their_views_and_keep_beams_blanking():
    options = step_pipeline_options(["--runner=DataflowRunner", "--project=p", "--temp_location=gs://t/x",
                                     "--impersonate_service_account=sa@p.iam.gserviceaccount.com"])
    for cls in _option_classes():
        options.view_as(cls)
    assert options.view_as(GoogleCloudOptions).impersonate_service_account == "sa@p.iam.gserviceaccount.com"
    state = options.__getstate__()
    assert "_views" not in state and "_views" in options.__dict__
    restored = pickle.loads(pickle.dumps(options))
    assert type(restored) is StepPipelineOptions and "_views" not in restored.__dict__
    cloud = restored.view_as(GoogleCloudOptions)
    assert cloud.impersonate_service_account is None  # Beam's __getstate__ blanks it for the job's runtime
    assert (cloud.project, cloud.temp_location) == ("p", "gs://t/x")
    assert restored.view_as(GoogleCloudOptions) is cloud
    assert options.view_as(GoogleCloudOptions).impersonate_service_account == "sa@p.iam.gserviceaccount.com"


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
