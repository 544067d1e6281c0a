"""A real ``shotclock serve`` process for the end-to-end tests. It lives in
:mod:`harness.server`, shared with the benchmark (which imports no test code)."""

from harness.server import ONE_ADDRESS_LOAD, ROOT, ServerProcess, free_port, http

__all__ = ["ONE_ADDRESS_LOAD", "ROOT", "ServerProcess", "free_port", "http"]
