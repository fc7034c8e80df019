"""tests/jax_lane — the JAX lane's own tests — run in a process of their own: Keras on JAX and TensorFlow made
unimportable (this process has TensorFlow loaded, and Keras picks its backend once per process)."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_jax_lane_tests_pass_in_a_process_without_tensorflow():
    env = {key: value for key, value in os.environ.items() if key not in ("KERAS_BACKEND", "XLA_FLAGS")}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/jax_lane", "-q", "-p", "no:cacheprovider",
         "--durations=0"],
        cwd=ROOT, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=1500)
    print(completed.stdout[-6000:])  # the inner suite's durations, in this test's captured output
    assert completed.returncode == 0, completed.stdout[-8000:] + completed.stderr[-3000:]
    passed = re.search(r"(\d+) passed", completed.stdout)
    assert passed and int(passed.group(1)) >= 20 and "failed" not in completed.stdout.splitlines()[-1]
