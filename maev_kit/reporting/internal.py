"""The seam of :mod:`maev_kit.reporting` for the other packages of maev_kit (not part of the user
API): MLflow logging, for the root package and the CLI.
"""

from __future__ import annotations

from maev_kit.reporting._mlflow import check_tracking_uri, log_to_mlflow, shown_tracking_uri

__all__ = ["check_tracking_uri", "log_to_mlflow", "shown_tracking_uri"]
