"""The self-contained HTML coordination report.

>>> from maev_kit.report import Report, report
"""

from maev_kit.report._report import Report, report

__all__ = ["Report", "report"]
