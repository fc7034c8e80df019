"""What the tests share, imported as `tests.support.<module>` (pytest's `pythonpath = ["."]`; no `sys.path` edits):

    paths           where the checkout and its configs are (`REPO`, `VERTEX_CONFIG`, ...)
    cli             `adrank(*args, cwd=...)`: the CLI as a user runs it (a subprocess); `sets([...])` → `--set` pairs
    step_processes  a local run's step processes seen in the process table (psutil): wait for a step, what is left after a kill
    checkout        a copy of the checkout's packages a test may edit (a code change between a kill and a resume)
    compiled_spec   the tasks of a compiled pipeline spec, nested DAGs included; the training loop's branches
    console         what must never reach the console (TensorFlow's C++ start-up lines)
"""
