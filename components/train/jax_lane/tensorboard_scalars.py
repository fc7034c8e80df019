"""The JAX lane's TensorBoard scalars: `train/loss` after every chunk and `eval/logloss` after every evaluated epoch
(the final evaluation too), by global step, into `AIP_TENSORBOARD_LOG_DIR` when Vertex (or the user) sets it — the
same tags as the TensorFlow lane (`components.train.callbacks.TensorBoardScalars`). Written with TensorBoard's own
event-file writer, which needs no TensorFlow (imported only when a log directory is set, so a JAX run without
TensorBoard — the device check's kit carries no `tensorboard` — does not need the package)."""

from __future__ import annotations

import os
import time

from components.train.run_paths import TENSORBOARD_ENV
from foundation.gcs_mount import container_path


class ScalarWriter:
    def __init__(self, log_dir: str):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.writer = EventFileWriter(container_path(log_dir))

    def write(self, tag: str, step: int, value: float) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(value))])
        self.writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def scalar_writer() -> ScalarWriter | None:
    """A writer into `AIP_TENSORBOARD_LOG_DIR`, or None when it is not set."""
    log_dir = os.environ.get(TENSORBOARD_ENV)
    return ScalarWriter(log_dir) if log_dir else None
