"""Run the compiled Vertex pipeline spec on this machine, the way Vertex and GCPC's launcher run it.

    pipeline_spec   the compiled YAML: root DAG tasks, components, executors, order (the DAG walk)
    job_context     what Vertex fills in for a pipeline job: names, ids, times, project, location, root
    executor_input  each task's ExecutorInput as the driver builds it; the outputs it leaves
    placeholders    {{$...}} resolution in container commands and args
    storage         gs://BUCKET/... and /gcs/BUCKET/... are ROOT/BUCKET/...
    custom_job      GCPC's custom-job launcher and the CustomJob service: one process per replica
    machines        which machines this computer stands in for (CPU; GPUs present; never TPU)
    dataflow        DataflowRunner options checked, DirectRunner in its place
    model_registry  the promotion step's Model Registry → a local registry
    vertex_only     `join experiment`, `model version`: Vertex-only steps, recorded as stand-ins
    processes       process groups, ended with the executor
    task_startup/   sitecustomize for every task's Python: /gcs/ → ROOT, die with the executor's shell
    runner          `run_spec`: the walk and each task's run

See docs/spec_executor.md for what it covers and what only a real Vertex project shows.
"""
