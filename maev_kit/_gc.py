"""One way to pause Python's cyclic garbage collector around bulk object building."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block; the collector's state is restored after.

    Loading traces, proposing facts, scoring a Ray block: each builds many small objects with no
    reference cycles, and every automatic collection walks all live objects (measured: loading
    10,000 traces 3.4 s → 1.3 s CPU; a Ray block's scoring 2.6x, unpickling its results 8x).
    What is built inside is freed by reference counting as usual.

    >>> import gc
    >>> with paused_gc():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
