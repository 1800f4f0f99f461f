"""The self-contained HTML coordination report.

>>> from maev_kit.report import Report, report

The package shares its name with the function ``maev_kit.report``. Importing the package sets
the attribute ``maev_kit.report`` to the package, so the package is made callable (it calls
:func:`report`): ``from maev_kit import report; report(result)`` works in any import order.
"""

import sys as _sys
import types as _types

from maev_kit.report._report import Report, report

__all__ = ["Report", "report"]


class _CallableModule(_types.ModuleType):
    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return report(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
