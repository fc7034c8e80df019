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
