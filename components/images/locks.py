"""The pinned environments the container images install, and how each one is resolved with uv.

| lock | from | installed by |
|---|---|---|
| `requirements.lock` | `requirements.in` | the dev venv, the `cpu` image (also the Dataflow worker and KFP launcher image) |
| `requirements-gpu.lock` | `requirements-gpu.in` | the `gpu` image: the cpu lock plus TensorFlow's CUDA/cuDNN wheels |
| `requirements-tpu.lock` | `requirements-tpu.in` | the `tpu` image: `tensorflow-tpu` + `libtpu` instead of `tensorflow` |
| `requirements-jax-tpu.lock` | `requirements-jax-tpu.in` | the `jax-tpu` image (Python 3.12): the JAX lane, `jax[tpu]`, `jax-tpu-embedding` |
| `requirements-jax-gpu.lock` | `requirements-jax-gpu.in` | the `jax-gpu` image (Python 3.12): the JAX lane, `jax[cuda12]` |

The gpu and tpu locks are resolved with the cpu lock as constraints, so every package they share
with the tested dev environment has the same version; the tpu lock only lets the TensorFlow packages
differ (`TPU_REPLACES`). The JAX locks are resolved on their own for Python 3.12 (jax 0.11 and jax-tpu-embedding need
it; the dev venv tests the JAX lane on Python 3.11's jax 0.10), and must not pin TensorFlow. `tensorflow-tpu` is a different distribution of the same `tensorflow` module,
so `requirements-tpu.overrides` removes the `tensorflow` requirement that tensorflow-transform,
tfx-bsl and tf-keras declare; otherwise the CPU wheel would be installed over the TPU build.

Stdlib only, so `make lock` can run it before any venv exists:
    python components/images/locks.py compile [--uv "python -m uv"]   # (re)write every lock
    python components/images/locks.py check   [--uv uv]                # every lock resolves as pinned
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON_VERSION = "3.11"
COMPILE_COMMAND = "make lock"
# Packages the TPU lock may pin differently from the cpu lock: TensorFlow's TPU build is one minor
# release behind (`tensorflow-tpu` 2.21 is not published), and these follow TensorFlow's version.
TPU_REPLACES = frozenset({"tensorflow", "tf-keras", "tensorboard"})  # tensorflow-tpu pins its tensorboard
JAX_PYTHON_VERSION = "3.12"
NO_TENSORFLOW = frozenset({"tensorflow", "tensorflow-cpu", "tensorflow-tpu", "tf-keras"})


@dataclass(frozen=True)
class Lock:
    """One image family's lock: where it comes from and how uv resolves it."""

    target: str
    source: str
    path: str
    platform: str
    overrides: str | None = None
    constrained_by_cpu_lock: bool = False
    may_differ_from_cpu: frozenset[str] = frozenset()
    must_not_pin: frozenset[str] = frozenset()
    python_version: str = PYTHON_VERSION
    base_stage: str = "lock"  # the Dockerfile stage the image's stage starts from

    def read(self, root: Path = REPO) -> dict[str, str]:
        return read_pins(root / self.path)


LOCKS = (
    Lock("cpu", "requirements.in", "requirements.lock", "x86_64-manylinux_2_28"),
    Lock("gpu", "requirements-gpu.in", "requirements-gpu.lock", "x86_64-manylinux_2_28",
         constrained_by_cpu_lock=True),
    # libtpu publishes manylinux_2_31 wheels only; python:3.11-slim (Debian) has a newer glibc.
    Lock("tpu", "requirements-tpu.in", "requirements-tpu.lock", "x86_64-manylinux_2_31",
         overrides="requirements-tpu.overrides", constrained_by_cpu_lock=True, may_differ_from_cpu=TPU_REPLACES,
         must_not_pin=frozenset({"tensorflow"})),
    # the JAX lane's images: Python 3.12, no TensorFlow (libtpu publishes manylinux_2_31 wheels only)
    Lock("jax-tpu", "requirements-jax-tpu.in", "requirements-jax-tpu.lock", "x86_64-manylinux_2_31",
         must_not_pin=NO_TENSORFLOW, python_version=JAX_PYTHON_VERSION, base_stage="lock_jax"),
    Lock("jax-gpu", "requirements-jax-gpu.in", "requirements-jax-gpu.lock", "x86_64-manylinux_2_28",
         must_not_pin=NO_TENSORFLOW, python_version=JAX_PYTHON_VERSION, base_stage="lock_jax"),
)
CPU_LOCK = LOCKS[0]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;#]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a uv-compiled lock, by canonical name."""
    pins: dict[str, str] = {}
    for line in Path(path).read_text().splitlines():
        match = PIN.match(line)
        if match:
            pins[canonical(match.group(1))] = match.group(3)
    return pins


def _resolution_flags(lock: Lock, root: Path) -> list[str]:
    flags = ["--python-version", lock.python_version, "--python-platform", lock.platform]
    if lock.overrides:
        flags += ["--override", str(root / lock.overrides)]
    return flags


def cpu_constraints(lock: Lock, root: Path) -> Path:
    """The cpu lock's pins as a constraints file (under build/), less the packages `lock` pins on its own."""
    pins = {name: version for name, version in CPU_LOCK.read(root).items() if name not in lock.may_differ_from_cpu}
    path = root / "build" / "locks" / f"{lock.target}-constraints.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    return path


def compile_args(lock: Lock, root: Path) -> list[str]:
    """`uv pip compile` arguments (paths relative to `root`) that (re)write `lock` from its `.in` file.

    The cpu lock's header keeps the plain uv command; the others say `make lock`, since their
    constraints file is generated.
    """
    args = ["pip", "compile", lock.source, *_resolution_flags(lock, Path("."))]
    if lock.constrained_by_cpu_lock:
        constraints = cpu_constraints(lock, root).relative_to(root)
        # Every package would be annotated "via -c <constraints>": the reasons live in requirements.lock.
        args += ["--constraint", str(constraints), "--custom-compile-command", COMPILE_COMMAND, "--no-annotate"]
    return [*args, "-o", lock.path]


def resolve_args(lock: Lock, root: Path, output: Path) -> list[str]:
    """`uv pip compile` arguments that resolve the lock's own pins (nothing may be added or moved)."""
    return ["pip", "compile", str(root / lock.path), *_resolution_flags(lock, root),
            "--no-header", "--no-annotate", "--quiet", "-o", str(output)]


def _run_uv(uv: list[str], args: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([*uv, *args], capture_output=True, text=True, cwd=cwd)


def compile_locks(uv: list[str], root: Path = REPO) -> None:
    """Rewrites every lock, cpu first (the others are constrained by it)."""
    for lock in LOCKS:
        completed = _run_uv(uv, compile_args(lock, root), cwd=root)
        if completed.returncode != 0:
            raise SystemExit(f"{lock.path}: uv pip compile failed:\n{completed.stderr.strip()}")
        print(f"{lock.path}: {len(lock.read(root))} pins")


def consistency_problems(lock: Lock, root: Path = REPO) -> list[str]:
    """Where the lock leaves the cpu lock's versions beyond what it may, or pins what it must not."""
    own = lock.read(root)
    problems = [f"{lock.path}: pins {name}=={own[name]}, which the {lock.target} image must not install"
                for name in sorted(lock.must_not_pin & own.keys())]
    if not lock.constrained_by_cpu_lock:
        return problems
    cpu = CPU_LOCK.read(root)
    for name, version in sorted(cpu.items()):
        if name in lock.may_differ_from_cpu:
            continue
        if name not in own:
            problems.append(f"{lock.path}: lacks {name}=={version}, which {CPU_LOCK.path} pins")
        elif own[name] != version:
            problems.append(f"{lock.path}: {name}=={own[name]} but {CPU_LOCK.path} pins {name}=={version}")
    return problems


def resolution_problems(lock: Lock, uv: list[str], root: Path = REPO) -> list[str]:
    """Resolves the lock's pins with uv for the image's platform: each must exist and fit together."""
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "resolved.txt"
        completed = _run_uv(uv, resolve_args(lock, root, output))
        if completed.returncode != 0:
            detail = completed.stderr.strip().splitlines()
            return [f"{lock.path} does not resolve: " + " ".join(line.strip() for line in detail[:12])]
        resolved, pinned = read_pins(output), lock.read(root)
    problems = [f"{lock.path}: resolving it adds {name}=={resolved[name]}" for name in sorted(resolved.keys() - pinned)]
    problems += [f"{lock.path}: {name}=={pinned[name]} resolves to {resolved.get(name)}"
                 for name in sorted(pinned) if resolved.get(name) != pinned[name]]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="locks.py", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["compile", "check"])
    parser.add_argument("--uv", default="uv", help="how to run uv (default: uv on PATH)")
    args = parser.parse_args(argv)
    uv = shlex.split(args.uv)
    if args.action == "compile":
        compile_locks(uv)
        return 0
    problems = []
    for lock in LOCKS:
        found = consistency_problems(lock) + resolution_problems(lock, uv)
        print(f"{lock.path}: " + ("ok" if not found else f"{len(found)} problem(s)"))
        problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
