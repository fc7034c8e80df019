"""The serving container's settings, read from its environment: where the model lies and where to answer (the
variables Vertex sets), and what one request and the server as a whole may take (the operator's `ADRANK_*` limits).

Each setting is a pydantic field named by its variable (the alias) with its bounds declared on the field; a value
outside them is a `ValueError` of one line naming the variable, what it holds and what is expected, so the server
refuses to start rather than answer nothing."""

from __future__ import annotations

import os
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

DEFAULT_MAX_BODY_BYTES = 10 * 2**20  # 10 MiB: a request body over it is answered 413 before it is read
DEFAULT_MAX_INSTANCES = 1000
DEFAULT_PORT = 8080
PORT_VARIABLE = "AIP_HTTP_PORT"  # Vertex sets the port the container listens on
STORAGE_VARIABLE = "AIP_STORAGE_URI"


class _FromEnvironment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False, validate_by_name=True,
                              validate_by_alias=True)

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Self:
        """The settings from `environ` (default: this process's environment); unset variables keep their
        defaults."""
        environ = dict(os.environ) if environ is None else environ
        aliases = {field.alias for field in cls.model_fields.values()}
        given = {name: value.strip() for name, value in environ.items() if name in aliases}
        try:
            return cls.model_validate(given)
        except ValidationError as error:
            raise ValueError(cls._one_line(error.errors()[0], environ)) from None

    @classmethod
    def _field(cls, error: Any) -> FieldInfo:
        """The field a validation error is about (its location is the variable: the field's alias)."""
        return next(field for field in cls.model_fields.values() if field.alias == error["loc"][0])

    @classmethod
    def _one_line(cls, error: Any, environ: dict[str, str]) -> str:
        raise NotImplementedError


class ServingLimits(_FromEnvironment):
    """What one request and the server as a whole may take. Each bound's description says why it is there: beyond
    it the server would hold a client, a thread or memory for good."""

    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, alias="ADRANK_MAX_BODY_BYTES", gt=0, le=2**30,
                                description="1 GiB: a body is held in memory whole")
    max_instances: int = Field(DEFAULT_MAX_INSTANCES, alias="ADRANK_MAX_INSTANCES", gt=0, le=1_000_000,
                               description="a request is one model call")
    read_timeout_seconds: float = Field(10.0, alias="ADRANK_READ_TIMEOUT_SECONDS", gt=0, le=3600.0,
                                        description="an hour: a slow client holds a connection slot that long")
    max_connections: int = Field(64, alias="ADRANK_MAX_CONNECTIONS", gt=0, le=10_000,
                                 description="one thread per connection")
    # model calls at once; other requests wait for a slot before TensorFlow
    max_concurrent_predictions: int = Field(4, alias="ADRANK_MAX_CONCURRENT_PREDICTIONS", gt=0, le=1024,
                                            description="model calls at once, each with its own tensors")

    @classmethod
    def _one_line(cls, error: Any, environ: dict[str, str]) -> str:
        field = cls._field(error)
        variable, text = field.alias, environ.get(field.alias or "", "")[:40]
        what = "a positive whole number" if field.annotation is int else "a positive number of seconds"
        bound = next(m.le for m in field.metadata if hasattr(m, "le"))
        if error["type"] == "finite_number":
            return f"{variable}={text!r}: not finite; expected {what} up to {bound:g}"
        if error["type"] == "less_than_equal":
            return f"{variable}={text!r}: over the bound of {bound:g} ({field.description})"
        if error["type"] == "greater_than":
            return f"{variable}={text!r}: expected {what}"
        return f"{variable}={text!r}: not a number; expected {what}"


class ServingSettings(_FromEnvironment):
    """Where the model lies and where to answer, as Vertex's prediction container contract names them."""

    storage_uri: str = Field(alias=STORAGE_VARIABLE, min_length=1)
    http_port: int = Field(DEFAULT_PORT, alias=PORT_VARIABLE, ge=1, le=65535)
    predict_route: str = Field("/predict", alias="AIP_PREDICT_ROUTE", min_length=1)
    health_route: str = Field("/health", alias="AIP_HEALTH_ROUTE", min_length=1)

    @classmethod
    def _one_line(cls, error: Any, environ: dict[str, str]) -> str:
        variable = cls._field(error).alias or ""
        text = environ.get(variable, "")[:40]
        if variable == STORAGE_VARIABLE:
            return f"{STORAGE_VARIABLE} is not set (Vertex sets it to the model's artifact directory)"
        if variable == PORT_VARIABLE:
            return f"{PORT_VARIABLE}={text!r}: not a port; expected a whole number from 1 to 65535"
        return f"{variable}={text!r}: {error['msg']}"
