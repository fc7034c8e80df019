"""`frozen_heap`: what was alive when the block began is out of the collector's passes while it runs, and back in
them after; a freeze the process made itself is left alone."""

from __future__ import annotations

import gc
import weakref

import pytest

from foundation.frozen_heap import frozen_heap


class _Cycle:
    def __init__(self):
        self.me = self


def test_objects_alive_at_the_start_are_frozen_for_the_block_and_collected_after():
    assert gc.get_freeze_count() == 0
    cycle = _Cycle()
    old = weakref.ref(cycle)
    with frozen_heap() as frozen:
        assert frozen > 0 and gc.get_freeze_count() > 0
        del cycle
        gc.collect()
        assert old() is not None  # garbage now, but frozen: the collector skips it
        new = _Cycle()
        made = weakref.ref(new)
        del new
        gc.collect()
        assert made() is None  # what the block makes is collected as always
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert old() is None  # the cycle that became garbage while frozen is collected once unfrozen


def test_an_error_in_the_block_still_unfreezes():
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("the job failed")
    assert gc.get_freeze_count() == 0


def test_a_freeze_the_process_made_itself_is_left_as_it_is():
    gc.freeze()
    try:
        with frozen_heap() as frozen:
            assert frozen == 0
        assert gc.get_freeze_count() > 0  # still frozen: not undone here (frozen objects freed meanwhile drop out)
    finally:
        gc.unfreeze()
