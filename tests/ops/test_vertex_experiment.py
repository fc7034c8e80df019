"""`adrank schedule add-to-experiment`: the runs a schedule started join the Vertex Experiment (Vertex does not
add them), so the Experiments page charts every day's promotion figures."""

from __future__ import annotations

from ops.cli import main

STORE = "projects/adrank-prod/locations/us-central1/metadataStores/default"


def test_scheduled_runs_join_the_experiment_once(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    args = [*vertex_args, "--api-endpoint", endpoint]
    assert main(["submit", *args]) == 0  # joins adrank-daily at submit, as the SDK does
    (submitted,) = fake.pipeline_jobs
    assert main(["schedule", "create", *args, "--start-now-if-past"]) == 0
    (schedule_id,) = fake.schedules
    days = [fake.fire_schedule(schedule_id, f"2026-03-0{day}T11:00:00Z") for day in (3, 4)]
    experiment = f"{STORE}/contexts/adrank-daily"
    assert fake.context_children[experiment] == [f"{STORE}/contexts/{submitted}"]
    capsys.readouterr()

    for _ in range(2):  # a second call adds nothing twice
        assert main(["schedule", "add-to-experiment", *args]) == 0
        out = capsys.readouterr().out
        assert "experiment adrank-daily: 2 scheduled run(s) in it" in out
        assert all(f"  {job}" in out.splitlines() for job in days)
        assert ("console: https://console.cloud.google.com/vertex-ai/experiments/locations/us-central1/experiments/"
                "adrank-daily?project=adrank-prod") in out
        assert sorted(fake.context_children[experiment]) == sorted(
            f"{STORE}/contexts/{job}" for job in [submitted, *days])
    assert fake.contexts[experiment]["schemaTitle"] == "system.Experiment"
    assert fake.rejected == []

    # another experiment, named on the command line, is created and gets the same runs
    assert main(["schedule", "add-to-experiment", *args, "--experiment", "ranking-review"]) == 0
    assert sorted(fake.context_children[f"{STORE}/contexts/ranking-review"]) == sorted(
        f"{STORE}/contexts/{job}" for job in days)


def test_without_an_experiment_it_says_which_setting_is_missing(fake_vertex, vertex_args, capsys):
    fake, endpoint = fake_vertex
    code = main(["schedule", "add-to-experiment", *vertex_args, "--set", "vertex.experiment=null",
                 "--api-endpoint", endpoint])
    assert code == 2
    assert "no experiment to add runs to: set vertex.experiment or pass --experiment" in capsys.readouterr().err
    assert main(["schedule", "add-to-experiment", *vertex_args, "--experiment", "x", "--api-endpoint", endpoint]) == 2
    assert "--experiment: experiment name 'x' has 1 characters" in capsys.readouterr().err
