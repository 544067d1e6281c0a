"""Moved to :mod:`clock_service.storage.index` (issue 19: the store owns its projections);
kept importable for older imports."""

from clock_service.storage.index import *  # noqa: F403
from clock_service.storage.index import __all__  # noqa: F401
