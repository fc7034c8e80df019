"""A DoFn's state and timer specs, found once per DoFn class: Beam looks them up about four times per DoFn object, and
each lookup inspects the signature of every method the DoFn has.

Beam 2.77's `apache_beam.transforms.userstate.get_dofn_specs(dofn)` wraps each bound method in `dir(dofn)` (about
30 for a plain DoFn: its own and the ones it inherits) and reads its parameters with `inspect.signature`, to collect
the `StateParam`/`TimerParam` defaults. Beam asks twice each time it builds a `DoFnSignature` of the DoFn (twice per
`ParDo` while the pipeline is built, once in each bundle processor that deserializes it), once more for the
keyed-input check and once for the runner API proto: 1,710 calls for the 421 DoFn objects of a 10^4-impression
preprocess step (1,308 of them while building it), 1.4–2.0 s of a 4.7–6.4 s step (timed inside the step,
docs/input.md). Those 421 objects are of 22 classes (320 of them `CallableWrapperDoFn`, the DoFn of every `Map`).

The specs are default arguments of the methods `getattr(dofn, name)` returns as bound methods. For a DoFn whose
instance holds no bound method of its own (a `Map`'s function is held as a plain function, which Beam skips), those
are its class's functions, so every object of the class has one answer: `dofn_specs` asks Beam once per class
(held weakly: a class made per call, as Beam's window DoFns are, is forgotten with it). A DoFn that holds a bound
method as an attribute, or whose class answers attribute lookups itself (`__getattr__`, `__getattribute__`,
`__dir__`, slots, a property of its own: any of them could hand out a bound method of the object's own making), is
asked about once per object instead (by identity, while the object lives; never by equality). New
sets are returned each time, as Beam does. An object whose specs Beam refuses (a duplicate parameter) raises Beam's
error at every call: nothing is kept for it. As Beam's own lookup, this assumes a class's methods are not replaced
after its DoFns are built.

`install` puts it in Beam's place for the version it was checked against (the lock's): Beam's callers look the
function up on the `userstate` module at each call. With any other Beam version Beam's own function stays (slower,
never wrong), and `tests/components/preprocess/test_beam_dofn_specs.py` fails on the upgrade so that it is checked
again.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

import apache_beam as beam
from apache_beam.transforms import userstate

CHECKED_VERSION = "2.77.0"  # the apache-beam of requirements*.lock
_BEAM_OWN = userstate.get_dofn_specs

Specs = tuple[frozenset[Any], frozenset[Any]]
_found: dict[int, tuple[weakref.ref[Any], Specs]] = {}  # per object, for DoFns whose class does not decide
_by_class: weakref.WeakKeyDictionary[type, Specs] = weakref.WeakKeyDictionary()


def _forget(key: int) -> Any:
    def forget(_: weakref.ref[Any]) -> None:
        _found.pop(key, None)
    return forget


_PLAIN_CLASS_ATTRIBUTES = (types.FunctionType, staticmethod, classmethod)
_class_plain: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _attributes_plain(cls: type) -> bool:
    """Whether an attribute of `cls`'s objects is the instance dict's value or the class's own: no attribute
    lookup of the class's own, no slots, and no descriptor but functions, static and class methods, Beam's `DoFn`
    properties (flags, never methods) and the instance dict's and weak reference's slots. (A property elsewhere
    could return a bound method of the object's own making.)"""
    plain = _class_plain.get(cls)
    if plain is None:
        plain = (cls.__getattribute__ is object.__getattribute__ and cls.__dir__ is object.__dir__
                 and not hasattr(cls, "__getattr__")
                 and all(not getattr(base, "__slots__", ()) and all(
                     not hasattr(value, "__get__") or isinstance(value, _PLAIN_CLASS_ATTRIBUTES)
                     or (base is beam.DoFn and isinstance(value, property))
                     or name in ("__dict__", "__weakref__")
                     for name, value in vars(base).items()) for base in cls.__mro__ if base is not object))
        try:
            _class_plain[cls] = plain
        except TypeError:
            pass
    return plain


def _decided_by_class(dofn: Any) -> bool:
    """Whether every object of `dofn`'s class has `dofn`'s specs: its bound methods are its class's functions."""
    if not _attributes_plain(type(dofn)):
        return False  # attributes found other than in the instance dict and the class: asked per object
    try:
        held = vars(dofn).values()
    except TypeError:
        return False
    return not any(isinstance(value, types.MethodType) for value in held)


def dofn_specs(dofn: Any) -> tuple[set[Any], set[Any]]:
    """What `userstate.get_dofn_specs(dofn)` returns (the DoFn's state specs, its timer specs), Beam asked once per
    DoFn class (once per object where the class does not decide)."""
    by_class = _decided_by_class(dofn)
    if by_class:
        found = _by_class.get(type(dofn))
        if found is not None:
            return set(found[0]), set(found[1])
    else:
        key = id(dofn)
        hit = _found.get(key)
        if hit is not None and hit[0]() is dofn:
            states, timers = hit[1]
            return set(states), set(timers)
    state_specs, timer_specs = _BEAM_OWN(dofn)
    kept = (frozenset(state_specs), frozenset(timer_specs))
    if by_class:
        try:
            _by_class[type(dofn)] = kept
        except TypeError:  # a class that cannot be weakly referenced: not kept
            pass
        return set(state_specs), set(timer_specs)
    try:
        ref = weakref.ref(dofn, _forget(key))
    except TypeError:
        return state_specs, timer_specs
    _found[key] = (ref, kept)
    return set(state_specs), set(timer_specs)


def install() -> bool:
    """Use `dofn_specs` for Beam's `userstate.get_dofn_specs` if Beam is the checked version. Returns whether it
    is in place."""
    if beam.__version__ != CHECKED_VERSION:
        return False
    userstate.get_dofn_specs = dofn_specs
    return True
