"""Errors a command reports to the user as one clear message, without a traceback."""


class CommandError(RuntimeError):
    """A command failed for a reason the user can act on."""


class VertexApiError(CommandError):
    """A Vertex AI request failed for good (not found, permission denied, invalid, no credentials)."""
