"""Which digest each image tag pointed to when `adrank images build` pushed it, so a compiled pipeline runs
`image@sha256:...` and not whatever a mutable tag points to weeks later.

The record is `components/images/digests.json` in the checkout (tag → `repository@sha256:digest`): like the locks,
it is committed with the code that was built, so compiling a checkout gives the same spec on every machine.
`adrank images build` writes it from the Cloud Build result: the build step writes one `TAG=REPO@sha256:...`
line per pushed image to `$BUILDER_OUTPUT/output` (components/images/cloudbuild.yaml), which Cloud Build returns
base64-encoded in `results.buildStepOutputs` of the Build resource (cloudbuild v1 `Results`); images a build
lists under `images:` come back in `results.images` (`name`, `digest`) and are read too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

DIGESTS_PATH = Path(__file__).parent / "digests.json"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


class BuildResultError(ValueError):
    """The Cloud Build result does not say which digests were pushed."""


def repository(image: str) -> str:
    """`image` without its tag or digest: `host/path/name:tag` → `host/path/name` (a registry port stays)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: len(name) - len(last[-1]) + last[-1].index(":")]
    return name


def digests_from_build(build: dict) -> dict[str, str]:
    """Tag → `repository@sha256:...` for every image the Cloud Build `build` (its JSON resource) pushed."""
    results = build.get("results") or {}
    pushed: dict[str, str] = {}
    for output in results.get("buildStepOutputs") or []:
        try:
            text = base64.b64decode(output, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as error:
            raise BuildResultError(f"a build step output is not base64 text: {error}") from None
        for line in text.splitlines():
            if not line.strip():
                continue
            tag, sep, pinned = line.strip().partition("=")
            if not sep or not PINNED.match(pinned) or repository(tag) != repository(pinned):
                raise BuildResultError(f"build step output line {line!r} is not TAG=REPOSITORY@sha256:<64 hex>")
            pushed[tag] = pinned
    for image in results.get("images") or []:
        name, digest = image.get("name", ""), image.get("digest", "")
        if name and DIGEST.match(digest):
            pushed[name] = f"{repository(name)}@{digest}"
    return pushed


@dataclass
class ImageDigests:
    """The recorded tag → digest reference map (`path`: where it is kept)."""

    path: Path = DIGESTS_PATH
    pinned: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path = DIGESTS_PATH) -> ImageDigests:
        if not path.exists():
            return cls(path)
        try:
            pinned = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise BuildResultError(f"{path} is not JSON: {error}") from None
        if not isinstance(pinned, dict) or not all(isinstance(v, str) and PINNED.match(v) for v in pinned.values()):
            raise BuildResultError(f"{path}: expected {{\"TAG\": \"REPOSITORY@sha256:...\"}}")
        return cls(path, dict(pinned))

    def record(self, pushed: dict[str, str]) -> None:
        """Add (or replace) the digests of `pushed` and write the file; other tags' records stay."""
        self.pinned.update(pushed)
        self.path.write_text(json.dumps(dict(sorted(self.pinned.items())), indent=2) + "\n")

    def resolve(self, image: str) -> str | None:
        """`image` pinned by digest: itself when it already is, its recorded digest, or None (not recorded)."""
        if PINNED.match(image):
            return image
        return self.pinned.get(image)
