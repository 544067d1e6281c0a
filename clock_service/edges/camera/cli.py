"""``shotclock camera calibrate``: the camera's command (the CLI only parses and composes)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

from clock_service.service.settings import Settings

__all__ = ["calibrate"]


def calibrate(args: argparse.Namespace, settings: Settings) -> int:
    """``shotclock camera calibrate``: one frame, the table's corners found (or given), saved.
    Exit status 0 saved, 1 the camera or the frame failed, 2 a wrong argument."""

    from clock_service.edges.camera.config import load_camera_config
    from clock_service.edges.camera.geometry import Calibration, CalibrationError
    from clock_service.edges.camera.source import SourceError, make_source, parse_source
    try:
        import cv2
    except ImportError:
        print("shotclock camera: OpenCV is not installed: pip install 'shotclock[camera]'",
              file=sys.stderr)
        return 2
    from clock_service.edges.camera.detect import find_table_corners

    try:
        config = load_camera_config(settings)
        spec = parse_source(args.source) if args.source else (config.spec if config else None)
    except ValueError as exc:
        print(f"shotclock camera: {exc}", file=sys.stderr)
        return 2
    if spec is None:
        print("shotclock camera: give --source or set SHOTCLOCK_CAMERA", file=sys.stderr)
        return 2
    if args.out:
        out = args.out
    elif config is not None:
        out = str(config.calibration_path)
    else:
        out = str(settings.camera_calibration_path)
    source = make_source(spec, lambda: time.time() * 1000)
    try:
        source.open()
        frame, _ = source.read()
    except SourceError as exc:
        print(f"shotclock camera: {exc}", file=sys.stderr)
        return 1
    finally:
        source.close()
    size = (int(frame.shape[1]), int(frame.shape[0]))
    if args.corners:
        values = [float(v) for v in args.corners.replace(";", ",").split(",") if v.strip()]
        if len(values) != 8:
            print("shotclock camera: --corners takes 8 numbers: x1,y1,x2,y2,x3,y3,x4,y4",
                  file=sys.stderr)
            return 2
        corners = [(values[i], values[i + 1]) for i in range(0, 8, 2)]
    else:
        found = find_table_corners(frame)
        if found is None:
            print("shotclock camera: could not find the table in the frame; give --corners "
                  "or click them on the /calibrate page", file=sys.stderr)
            return 1
        corners = found
    try:
        calibration = Calibration(tuple(corners), size)
    except CalibrationError as exc:
        print(f"shotclock camera: {exc}", file=sys.stderr)
        return 1
    from clock_service.edges.camera.appearance import (
        AppearanceError,
        keep_learned,
        learn_appearance,
    )
    if not args.no_learn:  # the felt's and the balls' colours and size (issue 21 point 3a)
        try:
            calibration = learn_appearance(calibration, frame)
        except AppearanceError as exc:
            print(f"shotclock camera: corners saved, appearance not learned: {exc}",
                  file=sys.stderr)
    if calibration.appearance is None:  # the look learned before is never lost (issue 37)
        with contextlib.suppress(OSError, CalibrationError):
            calibration = keep_learned(calibration, Calibration.load(out))
            if calibration.appearance is not None:
                print("shotclock camera: the look learned before is kept "
                      f"({calibration.appearance.balls} balls)", file=sys.stderr)
    calibration.save(out)
    if args.snapshot:
        import numpy as np

        shown = frame.copy()
        cv2.polylines(shown, [np.array(corners, np.int32)], True, (0, 0, 255), 2)
        cv2.imwrite(args.snapshot, shown)
    print(json.dumps({"saved": out, **calibration.to_dict()}))
    return 0
