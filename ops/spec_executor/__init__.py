"""Run the compiled Vertex pipeline spec on this machine, the way Vertex and GCPC's launcher run it.

    pipeline_spec   the compiled YAML: DAGs (root, nested, ExitHandler groups, loops), components, executors,
                    caching/retry/trigger policies, order (the DAG walk); unreadable YAML in one line
    conditions      dsl.If/Elif/Else: the CEL subset of triggerPolicy.condition KFP compiles, evaluated
    job_context     what Vertex fills in for a pipeline job: names, ids, times, project, location, root
    executor_input  each task's ExecutorInput as the driver builds it; the outputs it leaves
    placeholders    {{$...}} resolution in container commands and args
    storage         gs://BUCKET/... and /gcs/BUCKET/... are ROOT/BUCKET/...; tasks get those local paths as URIs
    custom_job      GCPC's custom-job launcher and the CustomJob service: one process per replica
    machines        which machines this computer stands in for (CPU; GPUs present; never TPU)
    dataflow        DataflowRunner options checked, DirectRunner in its place
    model_registry  the promotion step's Model Registry → a local registry
    notification_email  GCPC's VertexNotificationEmailOp → the notification recorded, never sent
    execution_cache Vertex's cache key and the index of succeeded executions under ROOT/spec-cache
    task_code       what the key adds here: a digest of the checkout's packages and the installed distributions
    job_lock        one executor per job (root + job id): the second is refused naming the first's pid
    task_retry_policy  a task's retryPolicy and the backoff before each retry
    job_record      spec_run.json: task states, run status, interrupted runs
    task_events     what whoever runs a job hears: a task starts, prints a line (adrank's log records to `logging`), ends
    vertex_only     `join experiment`, `model version`: Vertex-only steps, recorded as stand-ins
    processes       process groups, ended with the executor
    task_startup/   sitecustomize for every task's Python: die with the executor's shell
    runner          `run_spec`: the walk (nested DAGs, loops, conditions, exit handlers) and each task's run (cache,
                    stand-ins, retries)

It imports only itself and `foundation` (tests/test_import_graph.py): no step's code. What a step needs from it
arrives in the step's executor input and environment (`foundation.gcs_mount.GCS_ROOT_ENV`; what the caller adds in
`RunSpecOptions.environment`, e.g. `ADRANK_LOG_LEVEL`). `adrank run`'s run directory, lock, record and console live beside it in `ops.local_run`.

See docs/spec_executor.md for what it covers and what only a real Vertex project shows.
"""
