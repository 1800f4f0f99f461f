"""One local Ray cluster on 2 CPUs for the whole session (Ray costs ~10 s to start and stop).

The Ray tests are skipped only when Ray is not installed and ``CI`` is unset: in CI they run.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None and importlib.util.find_spec(
    "pyarrow") is not None


@pytest.fixture(scope="session")
def ray_cluster():
    if not HAVE_RAY and not os.environ.get("CI"):
        pytest.skip("ray[data] not installed (pip install 'maev-kit[scale]')")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             ignore_reinit_error=True, logging_level="ERROR")
    yield ray
    ray.shutdown()
