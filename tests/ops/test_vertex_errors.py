"""Vertex verbs that fail at the API (404, 403, 400, exhausted retries, no server) end in one line, exit 2."""

from __future__ import annotations

import logging

import pytest
import requests
from google.api_core import exceptions
from google.auth import exceptions as auth_exceptions

from ops.cli import main
from ops.errors import VertexApiError
from ops.vertex.api_calls import Backoff, with_backoff

JOBS = "projects/adrank-prod/locations/us-central1/pipelineJobs"


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    # besides the error: INFO records (`adrank: …`, e.g. the images the spec uses) and retry warnings
    lines = [line for line in err.strip().splitlines()
             if "retrying with backoff" not in line and not line.startswith("adrank: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_runs_show_of_an_unknown_job_names_the_job(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    err = _one_line_error(capsys, ["runs", "show", "no-such-run", "--backend", "vertex", *vertex_args,
                                   "--api-endpoint", endpoint])
    assert err.startswith(f"adrank runs: error: get {JOBS}/no-such-run: 404 NOT_FOUND, not found")
    assert "PipelineJob no-such-run not found" in err


def test_runs_show_refuses_what_cannot_be_a_job_id_before_any_request(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    for job in ("UNKNOWN", "../x", "a/b"):
        err = _one_line_error(capsys, ["runs", "show", job, "--backend", "vertex", *vertex_args,
                                       "--api-endpoint", endpoint])
        assert "is not a pipeline job id" in err
    assert fake.requests == []


@pytest.mark.parametrize("argv, method, path, status, expected", [
    (["runs", "list", "--backend", "vertex"], "GET", r"/pipelineJobs$", 403,
     "list pipeline jobs: 403 PERMISSION_DENIED, permission denied"),
    (["submit"], "POST", r"/pipelineJobs$", 400, "create pipeline job adrank-daily-"),
    (["schedule", "pause"], "GET", r"/schedules$", 403,
     "list schedules adrank-daily-retrain: 403 PERMISSION_DENIED"),
    (["schedule", "list"], "GET", r"/schedules$", 404, "list schedules: 404 NOT_FOUND"),
    (["schedule", "create", "--start-now-if-past"], "POST", r"/schedules$", 400,
     "create schedule adrank-daily-retrain: 400 INVALID_ARGUMENT, the request was rejected as invalid"),
])
def test_api_errors_are_one_line_naming_the_request(fake_vertex, vertex_args, capsys, argv, method, path, status,
                                                    expected):
    fake, endpoint = fake_vertex
    fake.failures.append((method, path, status))
    err = _one_line_error(capsys, [*argv, *vertex_args, "--api-endpoint", endpoint])
    assert expected in err
    assert "injected transient failure" in err  # the server's own message is kept
    assert endpoint not in err and f"{method} " not in err  # read from the answer's body, not the request line


def test_an_error_on_an_existing_schedule_names_it(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["schedule", "create", *args, "--start-now-if-past"]) == 0
    fake.failures.append(("DELETE", r"/schedules/\d+$", 403))
    err = _one_line_error(capsys, ["schedule", "delete", *args])
    assert "delete schedule adrank-daily-retrain: 403 PERMISSION_DENIED" in err
    assert len(fake.schedules) == 1


def test_retries_that_never_succeed_end_in_one_line(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    fake.failures += [("GET", r"/pipelineJobs$", 503)] * 6
    err = _one_line_error(capsys, ["runs", "list", "--backend", "vertex", *vertex_args, "--api-endpoint", endpoint])
    assert "list pipeline jobs: 503 UNAVAILABLE: injected transient failure (after 6 attempts)" in err


def test_client_side_failures_become_one_line_errors():
    def unreachable():
        raise requests.exceptions.ConnectionError("Connection refused")

    def retries_ran_out():
        raise exceptions.RetryError("Timeout of 120.0s exceeded, last exception: Connection refused", None)

    def no_credentials():
        raise auth_exceptions.DefaultCredentialsError("Your default credentials were not found.")

    for call, expected in ((unreachable, "get job: cannot reach the Vertex AI API: Connection refused"),
                           (retries_ran_out, "get job: no answer from the Vertex AI API: Timeout of 120.0s"),
                           (no_credentials, "get job: no usable Google Cloud credentials")):
        with pytest.raises(VertexApiError) as error:
            with_backoff(call, "get job")
        assert str(error.value).startswith(expected)


def test_with_backoff_keeps_non_api_errors(fake_vertex):
    def broken():
        raise KeyError("a bug, not an API error")

    with pytest.raises(KeyError):
        with_backoff(broken, "call")


def test_with_backoff_retries_transient_errors_until_the_call_succeeds(caplog):
    answers = [exceptions.ServiceUnavailable("busy"), exceptions.TooManyRequests("quota"), "job"]

    def flaky():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert with_backoff(flaky, "get job", Backoff(attempts=3, initial_seconds=0.001, maximum_seconds=0.001)) == "job"
    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [
        (logging.WARNING, "get job: 503 ServiceUnavailable, retrying with backoff (attempt 1/3)"),
        (logging.WARNING, "get job: 429 TooManyRequests, retrying with backoff (attempt 2/3)"),
    ]


def test_with_backoff_does_not_retry_a_permanent_error():
    calls = []

    def forbidden():
        calls.append(1)
        raise exceptions.Forbidden("no")

    with pytest.raises(VertexApiError, match="get job: 403 Forbidden, permission denied"):
        with_backoff(forbidden, "get job", Backoff(initial_seconds=0.001, maximum_seconds=0.001))
    assert len(calls) == 1


def test_with_backoff_stops_retrying_at_its_timeout():
    def always_busy():
        raise exceptions.ServiceUnavailable("busy")

    backoff = Backoff(attempts=1000, initial_seconds=0.01, maximum_seconds=0.01, timeout_seconds=0.2)
    with pytest.raises(VertexApiError, match=r"^get job: no answer from the Vertex AI API: Timeout of 0\.2s exceeded"):
        with_backoff(always_busy, "get job", backoff)
