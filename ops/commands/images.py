"""`adrank images build`: build and push the cpu/gpu/tpu (and serving) container images with Cloud Build.

The image names come from the config (`vertex.images`); the build runs `gcloud builds submit` on
`components/images/cloudbuild.yaml` from the repository root. Each target installs its own lock
(`components/images/locks.py`); the serving image (`vertex.model_registry.serving_image`) is built
too unless it is a Vertex prebuilt container. The command is printed first, so it
can be run by hand where gcloud is installed.

The build is submitted with `--async --format=json` (gcloud prints the Build resource, with its id), its log is
followed with `gcloud builds log --stream`, and the finished Build (`gcloud builds describe --format=json`) says
which digest each pushed tag got: recorded in components/images/digests.json (`components.images.digests`), so
`adrank compile|submit|schedule` pin the images by digest.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from ops.commands.options import add_config_arguments, config_from_args

DOCKERFILE = Path("components/images/Dockerfile")
CLOUDBUILD = Path("components/images/cloudbuild.yaml")
PREBUILT_PREDICTION = re.compile(r"^[a-z0-9-]+-docker\.pkg\.dev/vertex-ai(-restricted)?/")
PREBUILT_TENSORFLOW = re.compile(r"-docker\.pkg\.dev/vertex-ai(?:-restricted)?/prediction/tf2-(?:cpu|gpu)\.(\d+)-(\d+):")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("images", help="build and push the container images")
    actions = parser.add_subparsers(dest="images_command", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build the cpu/gpu/tpu images with Cloud Build and push them")
    add_config_arguments(build, required=True)
    build.add_argument("--dry-run", action="store_true", help="print the gcloud command, do not run it")
    build.add_argument("--source", default=".", metavar="DIR", help="repository root (the build context)")
    build.set_defaults(handler=_build)


def serving_image_to_build(serving_image: str) -> str:
    """The Model Registry's serving image, unless it is one of Vertex's prebuilt containers (not ours to build)."""
    return "" if PREBUILT_PREDICTION.search(serving_image) else serving_image


def check_serving_tensorflow(config, root: Path) -> None:
    """A promoted model is served by `vertex.model_registry.serving_image`: a Vertex prebuilt TensorFlow
    image must run the TensorFlow that trains it (requirements.lock), or the SavedModel may not load."""
    from components.images.locks import CPU_LOCK
    from ops.errors import CommandError

    serving_image = config.vertex.model_registry.serving_image
    prebuilt = PREBUILT_TENSORFLOW.search(serving_image)
    if not config.promotion.enabled or not prebuilt or not (root / CPU_LOCK.path).exists():
        return
    trained = ".".join(CPU_LOCK.read(root)["tensorflow"].split(".")[:2])
    served = f"{prebuilt.group(1)}.{prebuilt.group(2)}"
    if served != trained:
        raise CommandError(
            f"vertex.model_registry.serving_image '{serving_image}' serves TensorFlow {served} but models are "
            f"trained with TensorFlow {trained} ({CPU_LOCK.path}); set it to an image of the Dockerfile's serving "
            "target in your registry, e.g. REGION-docker.pkg.dev/PROJECT/REPO/adrank-serving:TAG (this command builds it)"
        )


def build_command(config, source: str = ".") -> list[str]:
    from ops.errors import CommandError

    if config.vertex is None:
        raise CommandError("the config has no 'vertex' section: image names live in vertex.images")
    check_serving_tensorflow(config, Path(source))
    images = config.vertex.images
    if "/" not in images.cpu:
        raise CommandError(
            f"vertex.images.cpu is '{images.cpu}': set it to a registry path, e.g. "
            "us-central1-docker.pkg.dev/PROJECT/REPO/adrank-cpu:TAG"
        )
    substitutions = (f"_CPU_IMAGE={images.cpu},_GPU_IMAGE={images.gpu or ''},_TPU_IMAGE={images.tpu or ''},"
                     f"_JAX_GPU_IMAGE={images.jax_gpu or ''},_JAX_TPU_IMAGE={images.jax_tpu or ''},"
                     f"_SERVING_IMAGE={serving_image_to_build(config.vertex.model_registry.serving_image)}")
    return [
        "gcloud", "builds", "submit", f"--project={config.vertex.project}", f"--region={config.vertex.region}",
        f"--config={CLOUDBUILD}", f"--substitutions={substitutions}", "--async", "--format=json", source,
    ]


def _build(args: argparse.Namespace) -> int:
    from ops.errors import CommandError

    config = config_from_args(args)
    command = build_command(config, args.source)
    print("$ " + shlex.join(command))
    if args.dry_run:
        return 0
    from components.images.locks import LOCKS

    root = Path(args.source)
    needed_files = (DOCKERFILE, CLOUDBUILD, Path("pyproject.toml"), *(Path(lock.path) for lock in LOCKS))
    for needed in needed_files:
        if not (root / needed).exists():
            raise CommandError(f"{root / needed} not found: run from the repository root (or pass --source)")
    if shutil.which("gcloud") is None:
        raise CommandError(
            "gcloud is not installed or not on PATH; install the Google Cloud CLI "
            "(https://cloud.google.com/sdk/docs/install), run `gcloud auth login`, then run the command above"
        )
    from components.images.digests import BuildResultError, ImageDigests, digests_from_build

    build = _gcloud_json(command, root, "gcloud builds submit")
    build_id = build.get("id")
    if not build_id:
        raise CommandError("gcloud builds submit answered no build id")
    vertex = config.vertex
    assert vertex is not None  # build_command refused a config without one
    location = [f"--project={vertex.project}", f"--region={vertex.region}"]
    streamed = subprocess.run(["gcloud", "builds", "log", "--stream", *location, build_id], cwd=root)
    if streamed.returncode != 0:
        raise CommandError(f"gcloud builds log --stream {build_id} failed with exit status {streamed.returncode}")
    finished = _gcloud_json(["gcloud", "builds", "describe", *location, "--format=json", build_id], root,
                            "gcloud builds describe")
    if finished.get("status") != "SUCCESS":
        raise CommandError(f"build {build_id} ended {finished.get('status')}: {finished.get('statusDetail', '')}"
                           .rstrip(": "))
    try:
        pushed = digests_from_build(finished)
        record = ImageDigests.load(root / "components" / "images" / "digests.json")
    except BuildResultError as error:
        raise CommandError(f"build {build_id}: {error}") from None
    if not pushed:
        raise CommandError(f"build {build_id} succeeded but reported no image digests (results.buildStepOutputs)")
    record.record(pushed)
    for tag, reference in sorted(pushed.items()):
        print(f"pushed {tag} = {reference}")
    print(f"recorded {len(pushed)} digest(s) in {record.path}: compile pins these images by digest "
          "(commit the file with the code it was built from)")
    return 0


def _gcloud_json(command: list[str], root: Path, what: str) -> dict:
    """Run a gcloud command whose stdout is one JSON resource (its stderr reaches the user)."""
    from ops.errors import CommandError

    completed = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, text=True)
    if completed.returncode != 0:
        raise CommandError(f"{what} failed with exit status {completed.returncode}")
    try:
        answer = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise CommandError(f"{what} did not print a JSON resource: {completed.stdout[:200]!r}") from None
    if not isinstance(answer, dict):
        raise CommandError(f"{what} printed {type(answer).__name__}, not a resource")
    return answer
