"""A local run of the DAG: `adrank run` and `adrank retrain` run the compiled pipeline on the local engine
(`ops.spec_executor`) and keep what it made under `runs/<run-id>/`. One module per concern:

    run           `run_locally`: compile, run on the engine, record the outcome (`LocalRunFailed` names the step)
    directories   the run directory: its layout, a run id, a new directory no two runs share
    lock          one process runs a run directory at a time (`.run.lock`)
    record        `run.json`: the run's record, read by `adrank runs`
    resume        `--resume`: whether a run may resume, its window, the checkpoints a training task continues from
    console       what the terminal and `pipeline.log` show while the engine runs
    report_files  the report's files and the promotion decision kept beside the record
    past_runs     `adrank runs list|show|compare`: past runs listed, one shown, two side by side
    replay        `adrank retrain --days`: the retraining pipeline for consecutive days, each a local run

Layout of a run directory:
  run.json        the run record (id, times, config hash, status, failed step and why, window end, attempts)
  .run.lock       flock'ed by the process running the run, for its whole life (`lock`)
  config.yaml     the exact config the run used (after overrides)
  pipeline.yaml   the compiled pipeline spec the engine ran (local backend)
  pipeline.log    everything the steps printed, each step's lines after a `task started: <task>` line
  artifacts/      the pipeline root: every step's outputs (`0/<job>/<task>_<id>/<output>`)
  spec-runs/<job>/   one engine job per attempt: spec_run.json (task states), tasks/<task>/task.log
  spec-cache/     the run's execution cache (what a resume reuses)
  report.html, report.md, summary.json   copies of the report step's outputs
  *.png           the report's figures, which report.md links (report.html embeds them)
"""
