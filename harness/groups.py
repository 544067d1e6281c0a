"""Which tests `make test` runs how (harness/suite.py; tests/conftest.py marks them).

SERIAL: tests that measure time against the wall clock (expiry lateness, latencies,
timeouts, real gpiozero hold times, a live camera): one at a time, at normal priority,
while the rest run beside them at a lower one. An entry is a directory, a file, or one
test (``file::name``: the rest of its file runs with the rest).

ALONE: tests that need the whole machine to themselves, not just their own turn: a camera
that must look at 80% of a 30 fps file in real time while its thread runs at a lower
priority than the loop (issue 21 point 7). They run after everything else; they are
`serial` too."""

from __future__ import annotations

__all__ = ["SERIAL", "ALONE"]

SERIAL = (
    "tests/faults/",
    "tests/mqtt/",
    "tests/camera/test_e2e_camera.py",
    "tests/reports/test_reports_e2e.py",
    "tests/hardware/test_buttons.py",
    "tests/hardware/test_gpio.py",
    "tests/hardware/test_remote.py",
    "tests/hardware/test_serial_display.py",
    "tests/hardware/test_serve_faults.py",
    "tests/hardware/test_serve_serial.py",
    "tests/browser/test_overlay.py",
    "tests/browser/test_display.py",
    # A page's link status against its ping rhythm (no false "stale"; a hung service noticed
    # within 3 s): at nice 10 on a slow machine whose cores the serial run kept busy, a page
    # went stale for 90 ms on a healthy link, and one noticed in 3.05 s.
    "tests/browser/test_match_day.py::test_a_healthy_link_never_says_no_news",
    "tests/browser/test_match_day.py::test_every_page_notices_a_hung_service_within_3_s",
    "tests/browser/test_match_day.py::test_a_page_held_up_by_its_own_device_does_not_blame_the_link",
    "tests/test_e2e.py",
    "tests/test_client.py",
    "tests/test_press_time.py",
)

ALONE = (
    "tests/camera/test_e2e_camera.py",
)
