"""A real ``shotclock serve`` process for the end-to-end tests. It lives in
:mod:`harness.server`, shared with the benchmark (which imports no test code)."""

from harness.server import CAMERA_NICE, ONE_ADDRESS_LOAD, ROOT, ServerProcess, free_port, http

__all__ = ["CAMERA_NICE", "ONE_ADDRESS_LOAD", "ROOT", "ServerProcess", "free_port", "http"]
