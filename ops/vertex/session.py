"""Connect the aiplatform client to a project and region (and, for tests, a local REST endpoint).

Credentials are never read from the config: the client uses Application Default Credentials
(`gcloud auth application-default login`, or the workload's service account). `api_endpoint`
points the client at another server, e.g. `http://127.0.0.1:PORT` for the test double; such an
endpoint speaks REST, so the REST transport and anonymous credentials are used with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from configs import AdrankConfig
from configs.vertex import VertexConfig


class VertexSetupError(RuntimeError):
    """The config cannot be used with Vertex AI (missing section, missing service account, ...)."""


@dataclass(frozen=True)
class VertexSession:
    project: str
    region: str
    api_endpoint: str | None = None

    @property
    def location_path(self) -> str:
        return f"projects/{self.project}/locations/{self.region}"

    def init(self) -> None:
        from google.cloud import aiplatform

        kwargs: dict = {"project": self.project, "location": self.region}
        if self.api_endpoint:
            from google.auth.credentials import AnonymousCredentials

            kwargs.update(api_endpoint=self.api_endpoint, api_transport="rest", credentials=AnonymousCredentials())
        aiplatform.init(**kwargs)


def vertex_section(config: AdrankConfig) -> VertexConfig:
    if config.vertex is None:
        raise VertexSetupError(f"config '{config.name}' has no 'vertex' section (project, region, pipeline_root, ...)")
    return config.vertex


def session_for(config: AdrankConfig, api_endpoint: str | None = None) -> VertexSession:
    vertex = vertex_section(config)
    session = VertexSession(vertex.project, vertex.region, api_endpoint)
    session.init()
    return session


def require_service_account(config: AdrankConfig) -> str:
    vertex = vertex_section(config)
    if not vertex.service_account:
        raise VertexSetupError(
            "vertex.service_account is not set: pipelines on Vertex must run as a dedicated service account "
            "(e.g. adrank-pipelines@PROJECT.iam.gserviceaccount.com with roles/aiplatform.user, "
            "roles/storage.objectAdmin on the pipeline root and roles/dataflow.developer); "
            "set it in the config or with --set vertex.service_account=..."
        )
    return vertex.service_account


def console_url(session: VertexSession, job_id: str) -> str:
    return (
        f"https://console.cloud.google.com/vertex-ai/locations/{session.region}/pipelines/runs/{job_id}"
        f"?project={session.project}"
    )
