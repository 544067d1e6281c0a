"""A synthetic overhead camera over a Russian pyramid table, with the ground truth of every
rest and every strike. Used by the camera tests and by ``bench/camera_bench.py``.

What it draws (numpy + OpenCV): a 12-foot table seen from above through a slightly tilted
camera (so calibration matters): floor, wooden rails with diamonds, cushions, six pockets,
a textured felt with an uneven light and a spot mark; 8 balls (7 whites and the coloured
one) with shading, shadows and motion blur; a player's cue (white ferrule, maple shaft,
dark butt) and arm with a bridge hand, which come in after the balls stop, sweep the aim
over other balls, make practice strokes and then strike; sometimes a second arm reaching
across the table over still balls; mains flicker and a random gain, sensor noise, and the
video codec's compression when written to a file.

The physics is simple but plausible: a struck ball slides off at 0.5-3 m/s, the cloth
slows every ball at a constant 0.6 m/s^2 (so each stop has an exact instant), balls
collide elastically-ish (restitution 0.93) and bounce off the cushions (0.7). No ball is
potted (pockets are drawn, the cushions are continuous): a session keeps its 8 balls.

Truth (milliseconds from the first frame; frame k is captured at k * 1000 / fps, the
middle of its exposure):
- ``rests``: the instant the last ball stopped (0 for the opening position);
- ``strikes``: the instant the cue tip met the cue ball (8.5: any ball may be the cue ball);
- ``busy``: intervals in which a cue or an arm moves over the bed while every ball is still.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from clock_service.edges.camera.geometry import BALL_MM, POCKET_MM, TABLE_MM, pockets_mm

__all__ = ["Truth", "SyntheticTable", "write_video", "FELTS"]

R = BALL_MM / 2
W, H = TABLE_MM
DECEL = 0.6e-3  # mm/ms^2 (0.6 m/s^2)
SETTLE_MM = 5.0  # the watcher's default still_mm
SETTLE_TAIL_MS = math.sqrt(2 * SETTLE_MM / DECEL)  # a ball's last 5 mm take this long
E_BALL = 0.93
E_CUSHION = 0.7
CUSHION_MM = 45.0
RAIL_MM = 110.0

# BGR felt colours of real halls: green, blue, petrol, burgundy-free (a red felt with a
# red ball is a table no camera can play), grey-blue.
FELTS = [(40, 115, 30), (120, 80, 20), (95, 100, 25), (110, 95, 80), (55, 130, 70)]
WHITE = (212, 222, 228)
COLOURED = [(40, 40, 190), (30, 120, 220), (30, 190, 225)]  # red, orange, yellow
SKIN = (125, 155, 205)
SLEEVES = [(235, 235, 235), (30, 30, 32), (130, 70, 40)]


@dataclass
class Truth:
    fps: float
    size: tuple[int, int]
    corners: list[tuple[float, float]]  # the bed's corners in the image (true calibration)
    frames: int = 0
    rests: list[float] = field(default_factory=list)
    settles: list[float] = field(default_factory=list)  # last SETTLE_MM of the roll began
    strikes: list[float] = field(default_factory=list)
    busy: list[tuple[float, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"fps": self.fps, "size": list(self.size), "corners": self.corners,
                "frames": self.frames, "rests": self.rests, "settles": self.settles,
                "strikes": self.strikes,
                "busy": self.busy}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Truth:
        return cls(data["fps"], tuple(data["size"]), [tuple(c) for c in data["corners"]],
                   data["frames"], data["rests"], data["settles"], data["strikes"],
                   [tuple(b) for b in data["busy"]])


class Physics:
    """Balls on the bed (mm, mm/ms): constant cloth deceleration, collisions, cushions."""

    def __init__(self, pos: np.ndarray) -> None:
        self.pos = pos.astype(np.float64)
        self.vel = np.zeros_like(self.pos)
        self.t = 0.0
        self.last_stop = 0.0
        self.stops = np.zeros(len(self.pos))  # each ball's last stop instant

    @property
    def moving(self) -> bool:
        return bool(np.any(self.vel != 0.0))

    def strike(self, ball: int, velocity: tuple[float, float]) -> None:
        self.vel[ball] = velocity

    def advance_to(self, t: float) -> None:
        while self.t < t - 1e-9:
            if not self.moving:
                self.t = t
                return
            self._step(min(1.0, t - self.t))

    def _step(self, dt: float) -> None:
        pos, vel = self.pos, self.vel
        speed = np.hypot(vel[:, 0], vel[:, 1])
        moving = speed > 0
        pos += vel * dt
        new_speed = np.maximum(0.0, speed - DECEL * dt)
        stopping = moving & (new_speed == 0.0)
        if stopping.any():
            self.last_stop = max(self.last_stop, self.t + float(np.max(speed[stopping])) / DECEL)
            self.stops[stopping] = self.t + speed[stopping] / DECEL
        scale = np.where(moving, new_speed / np.where(moving, speed, 1.0), 0.0)
        vel *= scale[:, None]
        # cushions
        for axis, limit in ((0, W), (1, H)):
            low = pos[:, axis] < R
            pos[low, axis] = 2 * R - pos[low, axis]
            vel[low, axis] = np.abs(vel[low, axis]) * E_CUSHION
            high = pos[:, axis] > limit - R
            pos[high, axis] = 2 * (limit - R) - pos[high, axis]
            vel[high, axis] = -np.abs(vel[high, axis]) * E_CUSHION
        # ball-ball
        d = pos[:, None, :] - pos[None, :, :]
        dist = np.hypot(d[..., 0], d[..., 1])
        close = np.argwhere(np.triu(dist < 2 * R, 1))
        for i, j in close:
            delta = pos[j] - pos[i]
            length = float(np.hypot(*delta)) or 1e-6
            normal = delta / length
            approach = float(np.dot(vel[i] - vel[j], normal))
            if approach > 0:
                impulse = (1 + E_BALL) / 2 * approach
                vel[i] -= impulse * normal
                vel[j] += impulse * normal
            push = (2 * R - length) / 2 + 0.01
            pos[i] -= push * normal
            pos[j] += push * normal
        self.t += dt


@dataclass
class Player:
    """One shot's cue and arm: where they are as a function of time."""

    ball: int
    direction: float  # radians, the cue ball's direction of travel
    speed: float  # mm/ms (m/s)
    t_rest: float
    t_arm: float  # arm and cue start coming in
    t_strike: float
    body: tuple[float, float]
    reach: tuple[float, float, float, int] | None  # (start, end, angle, ball) of a stray arm
    struck: bool = False


class SyntheticTable:
    """A seeded session: ``frames()`` yields (index, t_ms, BGR image); ``truth`` fills as it
    goes. ``max_shots`` ends the session after that many strikes once the balls are still."""

    def __init__(self, *, seed: int = 1, size: tuple[int, int] = (640, 360), fps: float = 30.0,
                 felt: int | None = None, noise: float = 4.0, flicker: float = 0.06,
                 first_strike_ms: tuple[float, float] = (1800, 5000)) -> None:
        self.seed = seed
        self.rng = random.Random(seed)  # the script (positions, shots); drawing never uses it
        self.np_rng = np.random.default_rng(seed)
        self.size = size
        self.fps = fps
        rng = self.rng
        self.felt = FELTS[felt if felt is not None else rng.randrange(len(FELTS))]
        self.coloured = rng.choice(COLOURED)
        self.sleeve = rng.choice(SLEEVES)
        self.noise = noise
        self.flicker = flicker
        self.prep_ms = first_strike_ms
        w, h = size
        # A tilted camera: the bed's corners, clockwise from the far-left one.
        j = lambda s: rng.uniform(-s, s)  # noqa: E731
        self.corners = [(w * (0.10 + j(0.01)), h * (0.13 + j(0.015))),
                        (w * (0.90 + j(0.01)), h * (0.11 + j(0.015))),
                        (w * (0.92 + j(0.01)), h * (0.88 + j(0.015))),
                        (w * (0.08 + j(0.01)), h * (0.86 + j(0.015)))]
        src = np.array([(0, 0), (W, 0), (W, H), (0, H)], np.float32)
        self.H = cv2.getPerspectiveTransform(src, np.array(self.corners, np.float32))
        self.truth = Truth(fps, size, [(round(x, 2), round(y, 2)) for x, y in self.corners])
        self.kinds = ["white"] * 7 + ["colour"]
        self.physics = Physics(self._opening())
        self.truth.rests.append(0.0)
        self.truth.settles.append(0.0)
        self.background = self._background()
        self._noise_bank = [self._noise_frame() for _ in range(6)] if noise > 0 else []
        self.player: Player | None = None
        self._strike_pos = np.zeros(2)
        self.max_shots: int | None = None
        self.shots = 0

    # -- the script --------------------------------------------------------------------------
    def _opening(self) -> np.ndarray:
        pos: list[tuple[float, float]] = []
        while len(pos) < 8:
            p = (self.rng.uniform(R + 60, W - R - 60), self.rng.uniform(R + 60, H - R - 60))
            if all(math.hypot(p[0] - q[0], p[1] - q[1]) > 3 * R for q in pos):
                pos.append(p)
        if self.rng.random() < 0.6:  # two balls touching: a common position
            a, b = pos[0], pos[1]
            angle = self.rng.uniform(0, 2 * math.pi)
            pos[1] = (a[0] + 2 * R * math.cos(angle), a[1] + 2 * R * math.sin(angle))
            pos[1] = (min(max(pos[1][0], R + 5), W - R - 5), min(max(pos[1][1], R + 5), H - R - 5))
            del b
        return np.array(pos)

    def _plan(self, t_rest: float, now: float) -> Player:
        rng = self.rng
        pos = self.physics.pos
        ball = rng.randrange(8)  # 8.5: a white or the coloured ball
        others = [i for i in range(8) if i != ball]
        if rng.random() < 0.6:
            target = pos[rng.choice(others)]
            direction = math.atan2(target[1] - pos[ball][1], target[0] - pos[ball][0])
        else:
            direction = rng.uniform(0, 2 * math.pi)
        # the player stands behind the cue ball, outside the table
        back = (-math.cos(direction), -math.sin(direction))
        body = self._outside(pos[ball], back)
        t_arm = max(t_rest + rng.uniform(300, 1200), now + 100)
        t_strike = t_arm + rng.uniform(*self.prep_ms)
        reach = None
        if rng.random() < 0.5:  # a stray arm over a still ball (leaning, pointing, chalk)
            victim = rng.choice(others)
            start = t_rest + rng.uniform(200, 900)
            reach = (start, start + rng.uniform(700, 1500), rng.uniform(0, 2 * math.pi), victim)
        return Player(ball, direction, rng.uniform(0.5, 3.0), t_rest, t_arm, t_strike, body,
                      reach)

    def _outside(self, p: np.ndarray, direction: tuple[float, float]) -> tuple[float, float]:
        """Where the ray from p leaves the table, 450 mm further on (a player's shoulder)."""
        ts = []
        for axis, limit in ((0, W), (1, H)):
            d = direction[axis]
            if abs(d) > 1e-9:
                ts.append(((limit if d > 0 else 0.0) - p[axis]) / d)
        t = min(t for t in ts if t > 0) + 450
        return (float(p[0] + direction[0] * t), float(p[1] + direction[1] * t))

    def frames(self, seconds: float | None = None, max_shots: int | None = None, *,
               from_ms: float = 0.0) -> Iterator[tuple[int, float, np.ndarray]]:
        """Frames up to ``seconds``; those before ``from_ms`` are simulated, not drawn (the
        same session from there on: drawing never touches the script's random numbers)."""
        period = 1000.0 / self.fps
        self.max_shots = max_shots
        k = 0
        while True:
            t = k * period
            if seconds is not None and t > seconds * 1000:
                break
            self._run_to(t)
            if (max_shots is not None and self.shots >= max_shots and self.player is None
                    and not self.physics.moving and t - self.truth.rests[-1] > 1500):
                break
            self.truth.frames = k + 1
            if t >= from_ms:
                yield k, t, self._render(t, k)
            k += 1

    def _run_to(self, t: float) -> None:
        ph = self.physics
        while True:
            player = self.player
            if player is not None and not player.struck and player.t_strike <= t:
                ph.advance_to(player.t_strike)
                self._strike_pos = ph.pos[player.ball].copy()
                u = (math.cos(player.direction), math.sin(player.direction))
                ph.strike(player.ball, (u[0] * player.speed, u[1] * player.speed))
                player.struck = True
                self.truth.strikes.append(round(player.t_strike, 3))
                self.truth.busy.append((player.t_arm, player.t_strike))
                if player.reach:
                    self.truth.busy.append(player.reach[:2])
                self.shots += 1
                continue
            was_moving = ph.moving
            ph.advance_to(t)
            if was_moving and not ph.moving:
                self.truth.rests.append(round(ph.last_stop, 3))
                # from here on no ball rolls SETTLE_MM more: at rest by the threshold
                struck = self.truth.strikes[-1]
                tails = [s - SETTLE_TAIL_MS for s in ph.stops if s > struck]
                self.truth.settles.append(round(max(tails + [struck]), 3))
            if player is not None and t > player.t_strike + 900:
                self.player = None
            if self.player is None and not ph.moving:
                last_rest = self.truth.rests[-1]
                more = self.max_shots is None or self.shots < self.max_shots
                if more and (not self.truth.strikes or self.truth.strikes[-1] < last_rest):
                    self.player = self._plan(last_rest, t)
            return

    # -- drawing -------------------------------------------------------------------------------
    def _to_image(self, pts: np.ndarray) -> np.ndarray:
        pts = np.asarray(pts, np.float64).reshape(-1, 1, 2)
        return cv2.perspectiveTransform(pts, self.H).reshape(-1, 2)

    def _background(self) -> np.ndarray:
        w, h = self.size
        scale = 0.5  # px/mm of the table raster
        margin = CUSHION_MM + RAIL_MM
        tw, th = int((W + 2 * margin) * scale), int((H + 2 * margin) * scale)
        table = np.zeros((th, tw, 3), np.uint8)
        table[:] = (40, 70, 110)  # rail wood
        rng = self.np_rng
        wood = cv2.GaussianBlur(rng.normal(0, 12, (th, tw)).astype(np.float32), (0, 0), 3)
        table = np.clip(table + wood[..., None], 0, 255).astype(np.uint8)

        def px(x: float, y: float) -> tuple[int, int]:
            return (int((x + margin) * scale), int((y + margin) * scale))

        cushion = tuple(int(c * 0.8) for c in self.felt)
        cv2.rectangle(table, px(-CUSHION_MM, -CUSHION_MM), px(W + CUSHION_MM, H + CUSHION_MM),
                      cushion, -1)
        # felt with a texture and a light that is brighter in the middle
        yy, xx = np.mgrid[0:th, 0:tw].astype(np.float32)
        cx, cy = tw / 2, th / 2
        light = 1.08 - 0.22 * (((xx - cx) / tw) ** 2 + ((yy - cy) / th) ** 2) * 2
        texture = cv2.GaussianBlur(rng.normal(0, 6, (th, tw)).astype(np.float32), (0, 0), 1.5)
        felt = np.clip(np.array(self.felt, np.float32) * light[..., None] + texture[..., None],
                       0, 255).astype(np.uint8)
        x0, y0 = px(0, 0)
        x1, y1 = px(W, H)
        table[y0:y1, x0:x1] = felt[y0:y1, x0:x1]
        cv2.circle(table, px(W * 0.75, H / 2), 3, (230, 230, 230), -1, cv2.LINE_AA)  # spot
        for (x, y) in pockets_mm():
            cv2.circle(table, px(x, y), int(POCKET_MM * scale), (12, 12, 12), -1, cv2.LINE_AA)
        for i in range(1, 8):  # diamonds on the long rails
            for y in (-CUSHION_MM - RAIL_MM / 2, H + CUSHION_MM + RAIL_MM / 2):
                cv2.circle(table, px(W * i / 8, y), 4, (200, 220, 230), -1, cv2.LINE_AA)
        # into the camera: the raster's pixel -> table mm -> image
        to_mm = np.array([[1 / scale, 0, -margin], [0, 1 / scale, -margin], [0, 0, 1]])
        frame = np.zeros((h, w, 3), np.uint8)
        floor = cv2.GaussianBlur(rng.normal(0, 10, (h, w)).astype(np.float32), (0, 0), 4)
        frame[:] = np.clip(np.full((h, w, 3), (45, 50, 55), np.float32) + floor[..., None],
                           0, 255).astype(np.uint8)
        cv2.warpPerspective(table, self.H @ to_mm, (w, h), dst=frame,
                            borderMode=cv2.BORDER_TRANSPARENT, flags=cv2.INTER_AREA)
        return frame

    def _noise_frame(self) -> tuple[np.ndarray, np.ndarray]:
        w, h = self.size
        n = self.np_rng.normal(0, self.noise, (h, w, 3))
        return (np.clip(n, 0, 255).astype(np.uint8), np.clip(-n, 0, 255).astype(np.uint8))

    def _scale_at(self, p: np.ndarray) -> float:
        a, b = self._to_image(np.array([p, p + (R, 0)]))
        return float(np.hypot(*(b - a)) / R)

    def _render(self, t: float, k: int) -> np.ndarray:
        img = self.background.copy()
        s = 16  # fixed-point subpixel drawing
        ph = self.physics
        shadow = tuple(int(c * 0.72) for c in self.felt)
        exposure = 8.0  # ms, centred on the capture time
        centres = self._to_image(ph.pos)
        tails = self._to_image(ph.pos - ph.vel * exposure / 2)
        heads = self._to_image(ph.pos + ph.vel * exposure / 2)
        radius = self._scale_at(np.array([W / 2, H / 2])) * R
        for c in centres:
            off = np.array([0.22, 0.28]) * radius
            cv2.circle(img, _fx(c + off, s), int(radius * 1.02 * s), shadow, -1, cv2.LINE_AA, 4)
        for i, c in enumerate(centres):
            colour = WHITE if self.kinds[i] == "white" else self.coloured
            dark = tuple(int(v * 0.78) for v in colour)
            r = radius
            if np.hypot(*(heads[i] - tails[i])) > 0.3 * r:  # motion blur: a capsule
                cv2.line(img, _fx(tails[i], s), _fx(heads[i], s), dark, int(2 * r),
                         cv2.LINE_AA, 4)
                cv2.line(img, _fx(tails[i], s), _fx(heads[i], s), colour, int(1.5 * r),
                         cv2.LINE_AA, 4)
            else:
                cv2.circle(img, _fx(c, s), int(r * s), dark, -1, cv2.LINE_AA, 4)
                cv2.circle(img, _fx(c - 0.08 * r, s), int(0.8 * r * s), colour, -1, cv2.LINE_AA, 4)
                cv2.circle(img, _fx(c - 0.3 * r, s), int(0.25 * r * s), (250, 250, 250), -1,
                           cv2.LINE_AA, 4)
        self._draw_player(img, t, s)
        gain = 1.0 + self.flicker * math.sin(2 * math.pi * t / 1000 * 7.3) \
            + self.flicker * 0.5 * random.Random(self.seed * 1_000_003 + k).uniform(-1, 1)
        img = cv2.convertScaleAbs(img, alpha=gain)
        if self._noise_bank:
            plus, minus = self._noise_bank[k % len(self._noise_bank)]
            roll = (k * 7) % 13
            cv2.add(img, np.roll(plus, roll, axis=1), dst=img)
            cv2.subtract(img, np.roll(minus, roll, axis=0), dst=img)
        return img

    def _draw_player(self, img: np.ndarray, t: float, s: int) -> None:
        p = self.player
        if p is None:
            return
        if p.reach and p.reach[0] <= t <= p.reach[1]:
            start, end, angle, victim = p.reach
            f = math.sin(math.pi * (t - start) / (end - start))  # in and out
            target = self.physics.pos[victim]
            outside = self._outside(target, (math.cos(angle), math.sin(angle)))
            hand = np.array(outside) + (target - np.array(outside)) * min(1.0, 1.3 * f)
            self._arm(img, hand, np.array(outside), s)
        if t < p.t_arm:
            return
        ball = self.physics.pos[p.ball] if t <= p.t_strike else self._strike_pos
        come = min(1.0, (t - p.t_arm) / 600)
        sweep = max(0.0, 1.0 - (t - p.t_arm - 600) / 800) if t > p.t_arm + 600 else 1.0
        angle = p.direction + math.radians(35) * sweep
        ua = np.array([math.cos(angle), math.sin(angle)])
        if t <= p.t_strike - 120:
            gap = 95 + 65 * math.sin(2 * math.pi * (t - p.t_arm) / 700)
        elif t <= p.t_strike:
            gap = 160 * (p.t_strike - t) / 120
        elif t <= p.t_strike + 100:
            gap = -100 * (t - p.t_strike) / 100  # follow-through
        else:
            gap = -100 + 900 * (t - p.t_strike - 100) / 800  # withdraw
        tip = ball - ua * (R + gap)
        body = np.array(p.body)
        if come < 1.0:
            tip = body + (tip - body) * come
        butt = tip - ua * 1450
        hand = tip - ua * 230
        self._arm(img, hand, body, s)
        self._cue(img, tip, butt, s)

    def _arm(self, img: np.ndarray, hand: np.ndarray, body: np.ndarray, s: int) -> None:
        skin_pts = _band(hand, hand + (body - hand) * 0.35, 80, 90)
        sleeve_pts = _band(hand + (body - hand) * 0.33, body, 100, 140)
        for pts, colour in ((sleeve_pts, self.sleeve), (skin_pts, SKIN)):
            cv2.fillConvexPoly(img, _fx(self._to_image(pts), s), colour, cv2.LINE_AA, 4)
        c = self._to_image(hand[None])[0]
        axes = self._scale_at(hand) * np.array([55.0, 42.0])
        angle = math.degrees(math.atan2(*(body - hand)[::-1]))
        cv2.ellipse(img, _fx(c, s), (int(axes[0] * s), int(axes[1] * s)), angle, 0, 360, SKIN,
                    -1, cv2.LINE_AA, 4)

    def _cue(self, img: np.ndarray, tip: np.ndarray, butt: np.ndarray, s: int) -> None:
        u = (butt - tip) / (np.hypot(*(butt - tip)) or 1)
        ferrule = tip + u * 18
        for a, b, wa, wb, colour in ((tip, ferrule, 12, 12, (235, 240, 240)),
                                     (ferrule, tip + u * 900, 12, 22, (150, 190, 215)),
                                     (tip + u * 900, butt, 22, 30, (35, 55, 100))):
            cv2.fillConvexPoly(img, _fx(self._to_image(_band(a, b, wa, wb)), s), colour,
                               cv2.LINE_AA, 4)


def _band(a: np.ndarray, b: np.ndarray, wa: float, wb: float) -> np.ndarray:
    d = b - a
    n = np.array([-d[1], d[0]]) / (np.hypot(*d) or 1)
    return np.array([a + n * wa / 2, b + n * wb / 2, b - n * wb / 2, a - n * wa / 2])


def _fx(p: np.ndarray, s: int) -> Any:
    """Fixed-point pixel coordinates for OpenCV's drawing with ``shift``."""
    arr = np.round(np.asarray(p) * s).astype(np.int32)
    return tuple(int(v) for v in arr) if arr.ndim == 1 else arr


def write_video(path: str | Path, *, seconds: float | None = None, max_shots: int | None = None,
                **options: Any) -> Truth:
    """Render a session to ``path`` (mp4v, the codec's own compression) and its truth to
    ``path`` + ``.json``; returns the truth."""
    table = SyntheticTable(**options)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), table.fps, table.size)
    if not writer.isOpened():
        raise RuntimeError(f"cannot write {path}")
    try:
        for _, _, image in table.frames(seconds, max_shots):
            writer.write(image)
    finally:
        writer.release()
    Path(str(path) + ".json").write_text(json.dumps(table.truth.to_dict()))
    return table.truth


def write_resting_table(folder: Path, seconds: float = 0.6, *, fps: float = 30.0,
                        hold_s: float | None = None) -> tuple[Path, Path]:
    """A video of a table with its balls at rest and nobody at it (seed 3: the player's
    arm comes into the picture at 0.67 s; no strike before 8 s), ``rest.mp4``, and its
    calibration, ``calibration.json`` (the corners, no look learned), in ``folder``.
    ``hold_s``: the ``seconds`` rendered are played forth and back until the video lasts
    that long (the balls still longer than the arm lets this seed show them)."""
    video = folder / "rest.mp4"
    table = SyntheticTable(seed=3, size=(640, 360), fps=fps, first_strike_ms=(8000, 9000))
    images = [image for _, _, image in table.frames(seconds)]
    frames = len(images) if hold_s is None else max(len(images), round(hold_s * fps))
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), fps, table.size)
    if not writer.isOpened():
        raise RuntimeError(f"cannot write {video}")
    try:
        cycle = images + images[-2:0:-1]  # forth and back: no jump where it turns
        for k in range(frames):
            writer.write(cycle[k % len(cycle)])
    finally:
        writer.release()
    cal = folder / "calibration.json"
    cal.write_text(json.dumps({"corners": table.truth.corners,
                               "frame_size": list(table.truth.size)}))
    return video, cal


@dataclass
class Score:
    """Decisions against the truth (times in ms from the first frame)."""

    strike_errors_ms: list[float]  # detected - true contact, per matched strike
    strike_frame_errors: list[int]  # detected frame - first frame at/after the contact
    rest_errors_ms: list[float]  # detected (first still frame) - the last ball's stop
    settle_errors_ms: list[float]  # detected - when the last 5 mm of the roll began
    rest_latency_ms: list[float]  # decision made - the last ball's stop
    missed_strikes: list[float]
    false_strikes: list[float]
    false_strikes_while_busy: list[float]  # false ones while a cue/arm moved over still balls
    missed_rests: list[float]
    extra_rests: list[float]

    def summary(self) -> dict[str, Any]:
        def pct(values: list[float], q: float) -> float | None:
            if not values:
                return None
            ordered = sorted(values)
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

        abs_frames = [abs(e) for e in self.strike_frame_errors]
        return {
            "strikes": len(self.strike_errors_ms) + len(self.missed_strikes),
            "strike_ms_p50": pct(self.strike_errors_ms, 0.5),
            "strike_ms_abs_p99": pct([abs(e) for e in self.strike_errors_ms], 0.99),
            "strike_ms_min": min(self.strike_errors_ms, default=None),
            "strike_ms_max": max(self.strike_errors_ms, default=None),
            "strike_frames_abs_p99": pct(abs_frames, 0.99),
            "strike_frames_abs_max": max(abs_frames, default=None),
            "missed_strikes": len(self.missed_strikes),
            "false_strikes": len(self.false_strikes),
            "false_strikes_while_busy": len(self.false_strikes_while_busy),
            "rests": len(self.rest_errors_ms) + len(self.missed_rests),
            "rest_ms_p50": pct(self.rest_errors_ms, 0.5),
            "rest_ms_abs_p99": pct([abs(e) for e in self.rest_errors_ms], 0.99),
            "rest_ms_abs_max": max((abs(e) for e in self.rest_errors_ms), default=None),
            "settle_ms_p50": pct(self.settle_errors_ms, 0.5),
            "settle_ms_abs_max": max((abs(e) for e in self.settle_errors_ms), default=None),
            "rest_decided_after_ms_p50": pct(self.rest_latency_ms, 0.5),
            "rest_decided_after_ms_max": max(self.rest_latency_ms, default=None),
            "missed_rests": len(self.missed_rests),
            "extra_rests": len(self.extra_rests),
        }


def score(truth: Truth, rests: list[tuple[float, float]], strikes: list[float],
          *, window_ms: float = 500.0) -> Score:
    """``rests``: (at, decided_at) of each Rest; ``strikes``: at of each Strike."""
    period = 1000.0 / truth.fps
    s_err, f_err, missed, used = [], [], [], set()
    for true in truth.strikes:
        best = min((i for i in range(len(strikes)) if i not in used),
                   key=lambda i: abs(strikes[i] - true), default=None)
        if best is None or abs(strikes[best] - true) > window_ms:
            missed.append(true)
            continue
        used.add(best)
        s_err.append(round(strikes[best] - true, 2))
        truth_frame = math.ceil(true / period - 1e-9)
        f_err.append(round(strikes[best] / period) - truth_frame)
    false = [strikes[i] for i in range(len(strikes)) if i not in used]
    busy = [t for t in false if any(a <= t <= b for a, b in truth.busy)]
    r_err, r_lat, r_missed, r_used, settle = [], [], [], set(), []
    for true, settled in zip(truth.rests, truth.settles, strict=True):
        best = min((i for i in range(len(rests)) if i not in r_used),
                   key=lambda i: abs(rests[i][0] - true), default=None)
        if best is None or abs(rests[best][0] - true) > 1500:
            r_missed.append(true)
            continue
        r_used.add(best)
        r_err.append(round(rests[best][0] - true, 2))
        settle.append(round(rests[best][0] - settled, 2))
        r_lat.append(round(rests[best][1] - true, 2))
    extra = [rests[i][0] for i in range(len(rests)) if i not in r_used]
    return Score(s_err, f_err, r_err, settle, r_lat, missed, false, busy, r_missed, extra)
