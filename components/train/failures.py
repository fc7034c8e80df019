"""Why a training run stops, in either lane."""

from __future__ import annotations


class HardwareUnavailableError(RuntimeError):
    """The target asked for hardware this machine does not have."""


class NonFiniteLossError(RuntimeError):
    """The training loss (or the gradient norm) became NaN or infinite."""
