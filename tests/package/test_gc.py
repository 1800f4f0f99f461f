"""paused_gc: no collection inside; what was built and lives on is handed over in the oldest
generation, so the next collections do not walk it again; a freeze of the caller's is kept."""

from __future__ import annotations

import gc

from maev_kit._gc import paused_gc


class _Marker:
    pass


def _generation_of(obj: object) -> int | None:
    return next((g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g))),
                None)


def test_what_is_built_is_handed_over_in_the_oldest_generation():
    with paused_gc():
        assert not gc.isenabled()
        built = [_Marker() for _ in range(10)]
    assert gc.isenabled()
    assert _generation_of(built[0]) == 2 and _generation_of(built) == 2
    assert gc.get_freeze_count() == 0


def test_a_freeze_of_the_callers_is_left_alone_and_a_disabled_collector_stays_off():
    before = _Marker()
    gc.freeze()
    try:
        with paused_gc():
            young = [_Marker()]
        # not unfrozen: what the caller froze is in no generation; what was built stays young
        assert gc.get_freeze_count() > 0 and _generation_of(before) is None
        assert _generation_of(young) == 0
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
