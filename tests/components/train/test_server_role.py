import json

from components.train.strategy import parameter_server_role


def test_only_workers_and_ps_of_a_parameter_server_cluster_serve(monkeypatch):
    cluster = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}
    for task_type, expected in (("chief", None), ("worker", "worker"), ("ps", "ps")):
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": task_type, "index": 0}}))
        assert parameter_server_role() == expected
    # multi-worker synchronous training: every worker trains, none serves
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 1}}))
    assert parameter_server_role() is None
    monkeypatch.delenv("TF_CONFIG")
    assert parameter_server_role() is None


def test_a_parameter_server_runs_step_rate_counts_every_worker_as_its_headline_does():
    from components.train.parameter_server import workers_step_rate

    # two workers, each computing 1 s of a 1 s window (2 s summed) over 100 steps of 512: never waiting, the run
    # trains 51,200 examples/s, and that is the step's own rate (one worker's alone would be half of it)
    assert workers_step_rate(100, 512, 2.0, workers=2) == 51_200
    assert workers_step_rate(100, 512, 2.0, workers=1) == 25_600
    assert workers_step_rate(0, 512, 2.0, workers=2) is None  # nothing timed
