"""The ``shotclock`` command run in the test's own process: ``main(argv)`` with the
environment the test gives, its output captured, its exit code as a process would have it.

For a command whose process is not what is tested (its words, its exit code, the files it
writes): a fresh Python costs about a second of CPU before the command starts. A command
that serves, or is killed, or whose process matters (its lock held by another process, its
working directory, its user), is run with ``subprocess``."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["Ran", "WentOnToServe", "shotclock"]


@dataclass(frozen=True)
class Ran:
    """As ``subprocess.CompletedProcess`` has it."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class WentOnToServe(AssertionError):
    """``serve`` or ``hall`` got as far as serving: in a test that expects a refusal."""


def _refuse_to_serve(server: object) -> None:
    raise WentOnToServe("the command went on to serve (a refusal was expected)")


def shotclock(*args: str, env: Mapping[str, str] | None = None) -> Ran:
    """``shotclock ARGS`` with ``env`` as its whole environment (this process's, unless
    given), run by this process. ``serve`` and ``hall`` must refuse before they serve:
    one that would serve raises ``WentOnToServe`` instead."""
    from unittest import mock

    from clock_service.edges.cli import main as command

    out, err = io.StringIO(), io.StringIO()
    with _environ(dict(os.environ) if env is None else env), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch.object(command, "_run_until_stopped", _refuse_to_serve):
        try:
            code: object = command.main(list(args))
        except SystemExit as exc:  # argparse, or a command that exits
            code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("words"): printed, exit 1
        err.write(f"{code}\n")
        code = 1
    return Ran(code, out.getvalue(), err.getvalue())
