"""The objects a process holds when a job starts, kept out of the cycle collector's full passes while it runs.

A step imports TensorFlow, tf.Transform and Beam before its job begins: about 630,000 objects that live as long as
the process. CPython's cycle collector walks every tracked object in each full (generation 2) collection, so each
one a step triggers costs 0.4–0.5 s on this 2-core host whether or not anything new is garbage (docs/input.md,
"Garbage collection during the preprocess job"). `gc.freeze()` (standard library, Python 3.7+) moves the objects
alive now to a permanent generation that collections skip; `gc.unfreeze()` returns them to the oldest generation
once the job is done, so anything among them that became garbage meanwhile is collected as before. Objects the job
creates are collected as always.

A process that froze objects itself (a server that forks workers, say) keeps its own freeze: then nothing is done
here, because `gc.unfreeze()` would undo theirs too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap() -> Iterator[int]:
    """Freeze the objects alive now for the block; yields how many were frozen (0: the process had frozen some
    already, and its freeze is left as it is)."""
    if gc.get_freeze_count():
        yield 0
        return
    gc.freeze()
    try:
        yield gc.get_freeze_count()
    finally:
        gc.unfreeze()
