"""The self-contained HTML coordination report.

>>> from maev_kit.reporting import Report, report

``report`` is also exported at the top level (``from maev_kit import report``). The package is
named ``reporting`` so that it never shadows that function.
"""

from maev_kit.reporting._report import Report, report

__all__ = ["Report", "report"]
