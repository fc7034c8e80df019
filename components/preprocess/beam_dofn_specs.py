"""A DoFn's state and timer specs, found once per DoFn object: Beam looks them up four times per DoFn on average,
and each lookup inspects the signature of every method the DoFn has.

Beam 2.77's `apache_beam.transforms.userstate.get_dofn_specs(dofn)` wraps each bound method in `dir(dofn)` (about
30 for a plain DoFn: its own and the ones it inherits) and reads its parameters with `inspect.signature`, to collect
the `StateParam`/`TimerParam` defaults. Beam asks twice each time it builds a `DoFnSignature` of the DoFn (twice per
`ParDo` while the pipeline is built, once in each bundle processor that deserializes it), once more for the
keyed-input check and once for the runner API proto: 1,710 calls for the 421 DoFn objects of a 10^4-impression
preprocess step (1,308 of them while building it), 1.4–2.0 s of a 4.7–6.4 s step (timed inside the step,
docs/input.md).

The specs are default arguments of the DoFn's methods, fixed once the DoFn is built, so every call on one object
has one answer. `dofn_specs` asks Beam once per object (by identity, while the object lives; never by equality) and
returns new sets each time, as Beam does. An object whose specs Beam refuses (a duplicate parameter) raises Beam's
error at every call: nothing is kept for it; one that cannot be weakly referenced is not kept either.

`install` puts it in Beam's place for the version it was checked against (the lock's): Beam's callers look the
function up on the `userstate` module at each call. With any other Beam version Beam's own function stays (slower,
never wrong), and `tests/components/preprocess/test_beam_dofn_specs.py` fails on the upgrade so that it is checked
again.
"""

from __future__ import annotations

import weakref
from typing import Any

import apache_beam as beam
from apache_beam.transforms import userstate

CHECKED_VERSION = "2.77.0"  # the apache-beam of requirements*.lock
_BEAM_OWN = userstate.get_dofn_specs

Specs = tuple[frozenset[Any], frozenset[Any]]
_found: dict[int, tuple[weakref.ref[Any], Specs]] = {}


def _forget(key: int) -> Any:
    def forget(_: weakref.ref[Any]) -> None:
        _found.pop(key, None)
    return forget


def dofn_specs(dofn: Any) -> tuple[set[Any], set[Any]]:
    """What `userstate.get_dofn_specs(dofn)` returns (the DoFn's state specs, its timer specs), Beam asked once per
    DoFn object."""
    key = id(dofn)
    hit = _found.get(key)
    if hit is not None and hit[0]() is dofn:
        states, timers = hit[1]
        return set(states), set(timers)
    state_specs, timer_specs = _BEAM_OWN(dofn)
    try:
        ref = weakref.ref(dofn, _forget(key))
    except TypeError:
        return state_specs, timer_specs
    _found[key] = (ref, (frozenset(state_specs), frozenset(timer_specs)))
    return set(state_specs), set(timer_specs)


def install() -> bool:
    """Use `dofn_specs` for Beam's `userstate.get_dofn_specs` if Beam is the checked version. Returns whether it
    is in place."""
    if beam.__version__ != CHECKED_VERSION:
        return False
    userstate.get_dofn_specs = dofn_specs
    return True
