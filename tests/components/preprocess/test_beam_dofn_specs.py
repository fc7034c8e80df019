"""`beam_dofn_specs.dofn_specs` gives what Beam's own `userstate.get_dofn_specs` gives, asks Beam once per DoFn class
(once per object where the object holds bound methods of its own), and is the one in use with the locked Beam. (Every whole-step test runs the preprocess pipeline with it.)"""

from __future__ import annotations

import gc
import re
import weakref
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.transforms.core import CallableWrapperDoFn
from apache_beam.transforms.timeutil import TimeDomain

from components.preprocess import beam_dofn_specs, stages  # noqa: F401 (stages installs dofn_specs, as the step does)
from components.preprocess.beam_dofn_specs import _BEAM_OWN, CHECKED_VERSION, dofn_specs

REPO = Path(__file__).resolve().parents[3]
BAG = userstate.BagStateSpec("seen", VarIntCoder())
TIMER = userstate.TimerSpec("flush", TimeDomain.WATERMARK)


class Plain(beam.DoFn):
    def process(self, element):
        yield element


class Stateful(beam.DoFn):
    def process(self, element, seen=beam.DoFn.StateParam(BAG), flush=beam.DoFn.TimerParam(TIMER)):
        seen.add(element[1])
        flush.set(0)

    @userstate.on_timer(TIMER)
    def on_flush(self, seen=beam.DoFn.StateParam(BAG)):
        yield sorted(seen.read())


class Duplicate(beam.DoFn):
    def process(self, element, a=beam.DoFn.StateParam(BAG), b=beam.DoFn.StateParam(BAG)):
        yield element


class Same(beam.DoFn):
    """Two of these compare equal: where specs are found per object, they must be found per object, not by equality."""

    def __init__(self, stateful: bool):
        if stateful:
            self.process = Stateful().process  # a bound method of its own: Stateful's specs, not its class's

    def __eq__(self, other):
        return isinstance(other, Same)

    def __hash__(self):
        return 0

    def process(self, element):
        yield element


class Delegating(beam.DoFn):
    """Its `process` is a property: a bound method of whatever the object holds, so the object decides."""

    def __init__(self, inner: beam.DoFn):
        self.inner = inner

    @property
    def process(self):
        return self.inner.process


def _mapped(element, seen=beam.DoFn.StateParam(BAG)):  # a Map's function with state (CallableWrapperDoFn)
    return element


@pytest.mark.parametrize("make", [Plain, Stateful, lambda: CallableWrapperDoFn(_mapped),
                                  lambda: CallableWrapperDoFn(lambda x: x), lambda: Same(True), lambda: Same(False),
                                  lambda: Delegating(Stateful()), lambda: Delegating(Plain())])
def test_the_same_specs_as_beam_every_time(make):
    dofn = make()
    theirs = _BEAM_OWN(dofn)
    for _ in range(3):
        ours = dofn_specs(dofn)
        assert ours == theirs
        ours[0].add("not kept")  # the caller's own sets, as from Beam
    assert dofn_specs(dofn) == theirs
    assert dofn_specs(make()) == theirs  # another object of the class


def test_beam_is_asked_once_per_class_where_the_class_decides(monkeypatch):
    asked: list = []
    monkeypatch.setattr(beam_dofn_specs, "_BEAM_OWN", lambda dofn: asked.append(dofn) or _BEAM_OWN(dofn))
    monkeypatch.setattr(beam_dofn_specs, "_by_class", weakref.WeakKeyDictionary())  # nothing found before this test
    monkeypatch.setattr(beam_dofn_specs, "_found", {})

    class Local(beam.DoFn):  # a class made per call, as Beam's window DoFns are
        def process(self, element, seen=beam.DoFn.StateParam(BAG)):
            yield element

    maps = [CallableWrapperDoFn(lambda x: x), CallableWrapperDoFn(_mapped), CallableWrapperDoFn(len)]
    for dofn in [Local(), Local(), *maps, *maps]:
        assert dofn_specs(dofn) == _BEAM_OWN(dofn)
    assert [type(dofn) for dofn in asked] == [Local, CallableWrapperDoFn]
    held = weakref.ref(Local)
    asked.clear()
    del Local
    gc.collect()
    assert held() is None  # not kept alive by the memo, and forgotten with it
    assert all(cls is not None for cls in beam_dofn_specs._by_class.keys())


def test_an_object_with_bound_methods_of_its_own_is_asked_per_object_and_per_object_only(monkeypatch):
    asked: list = []
    monkeypatch.setattr(beam_dofn_specs, "_BEAM_OWN", lambda dofn: asked.append(dofn) or _BEAM_OWN(dofn))
    monkeypatch.setattr(beam_dofn_specs, "_by_class", weakref.WeakKeyDictionary())  # nothing found before this test
    monkeypatch.setattr(beam_dofn_specs, "_found", {})
    first, second, plain = Same(True), Same(True), Same(False)
    assert first == second == plain
    for _ in range(4):
        assert dofn_specs(first) == _BEAM_OWN(Stateful())
    assert asked == [first]
    assert dofn_specs(second) == _BEAM_OWN(Stateful())
    assert len(asked) == 2 and asked[1] is second
    assert dofn_specs(plain) == (set(), set())  # its class's answer, not the equal objects'
    delegating = [Delegating(Stateful()), Delegating(Plain())]
    assert [dofn_specs(dofn) for dofn in delegating] == [_BEAM_OWN(Stateful()), (set(), set())]
    assert asked[-2:] == delegating  # a class with a property of its own: asked per object
    key = id(second)
    asked.clear()
    del second
    gc.collect()
    assert key not in beam_dofn_specs._found  # forgotten with its object


def test_a_duplicate_parameter_fails_as_beam_says_at_every_call():
    dofn = Duplicate()
    with pytest.raises(ValueError) as theirs:
        _BEAM_OWN(dofn)
    for _ in range(2):
        with pytest.raises(ValueError) as ours:
            dofn_specs(dofn)
        assert str(ours.value) == str(theirs.value)


def test_a_stateful_dofn_runs_with_its_state_and_timer():
    with beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = (p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(Stateful()))
        assert_that(out, equal_to([[1, 2], [3]]))


def test_in_use_with_the_locked_beam():
    locked = re.search(r"^apache-beam==(\S+)$", (REPO / "requirements.lock").read_text(), re.MULTILINE)
    assert locked and locked.group(1) == CHECKED_VERSION == beam.__version__
    assert userstate.get_dofn_specs is dofn_specs
