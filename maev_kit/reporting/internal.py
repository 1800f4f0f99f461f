"""The seam of :mod:`maev_kit.reporting` for the other packages of maev_kit: MLflow logging, for
the root package and the CLI.

Another package of maev_kit uses ``reporting`` through ``maev_kit.reporting`` (the user API) or
through this module, never through a private module of it (tests/package/test_private_names.py).
Not part of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.reporting._mlflow import check_tracking_uri, log_to_mlflow, shown_tracking_uri

__all__ = ["check_tracking_uri", "log_to_mlflow", "shown_tracking_uri"]
