"""Balls at rest and the strike, from the balls seen frame by frame. Pure: no I/O, no clock.

What goes in is one ``Observation`` per camera frame: its capture time, the balls the
detector found on the bed (millimetres), the detector's confidence in the frame, and the
answer to the watcher's own question about the spots where balls rest (``spots()``: is
that spot bare felt now?). What comes out are decisions:

- ``Rest``: every ball stayed within ``still_mm`` of where it was for ``rest_ms`` (I15:
  the clock starts when the balls are at rest). ``at`` is the capture time of the first
  frame of that still window: the moment the balls came to rest as the camera saw it; the
  decision itself is made ``rest_ms`` later.
- ``Strike``: after a rest, the first ball to leave its spot (8.5: whichever ball the cue
  met, a white or the coloured one). ``at`` is the capture time of the first frame in
  which it had moved.
- ``Unsure`` / ``Sure``: the view is (no longer) good enough to decide (an arm or a cloth
  over most of the bed, clutter, a dark frame); while unsure nothing is decided and the
  referee's buttons are the clock's only input.

Tracking balls, not pixels. A resting ball only counts as moved when two facts agree for
two frames in a row: its spot shows bare felt (a ball hidden by an arm or under a cue
leaves no felt behind) and a ball of its kind is seen away from every resting spot, further
out in the second frame than in the first. A cue or an arm over still balls hides them;
it cannot make felt appear where a ball still lies. When the strike is confirmed (a frame
or a few later), its time is taken from the ball's path: distances from the spot over the
first frames of its run are extrapolated back to zero, and the strike is the first frame
captured after that instant.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "Detection", "Observation", "Rest", "Strike", "Unsure", "Sure", "Decision",
    "WatchSettings", "Watcher",
]


@dataclass(frozen=True)
class Detection:
    """A ball seen on the bed: centre in mm, ``white`` or ``colour``, the detector's
    confidence that it is a whole ball."""

    x: float
    y: float
    kind: str = "white"
    confidence: float = 1.0


@dataclass(frozen=True)
class Observation:
    at: float  # capture time, ms on the service's timeline
    balls: tuple[Detection, ...] = ()
    # Answers to ``Watcher.spots()``: spot id -> share of bare felt in it, leaving out
    # where balls stand now.
    spots_felt: Mapping[int, float] = field(default_factory=dict)
    quality: float = 1.0  # the detector's confidence in the whole frame, 0..1


@dataclass(frozen=True)
class Rest:
    at: float  # capture time of the first frame of the still window
    decided_at: float
    balls: int


@dataclass(frozen=True)
class Strike:
    at: float  # capture time of the first frame in which the ball had moved
    decided_at: float
    kind: str  # the cue ball's kind (8.5)
    spot: tuple[float, float]
    estimate: float  # the extrapolated instant the ball started to move (between frames)


@dataclass(frozen=True)
class Unsure:
    at: float
    reason: str


@dataclass(frozen=True)
class Sure:
    at: float


Decision = Rest | Strike | Unsure | Sure


@dataclass(frozen=True)
class WatchSettings:
    rest_ms: float = 300.0  # no ball moved beyond still_mm for this long: at rest
    still_mm: float = 5.0
    ball_mm: float = 68.0
    vacated: float = 0.6  # share of bare felt that shows a spot is empty
    max_speed: float = 6.0  # mm/ms: how far a struck ball can be from its spot
    recount_ms: float = 2000.0  # fewer balls than at the last rest, still: accept the count
    quality_low: float = 0.5
    unsure_ms: float = 500.0  # low quality this long: unsure
    sure_ms: float = 1000.0  # good quality this long again: sure
    early_ms: float = 4.0  # the extrapolated start is taken this much earlier (its error)


@dataclass
class _Spot:
    """A ball at rest, where it rests."""

    id: int
    x: float
    y: float
    kind: str
    seen_at: float  # last frame it was seen on its spot
    evidence: list[tuple[float, float, float, float]] = field(default_factory=list)
    # (at, distance, x, y) of the frames in a row with felt on the spot and a ball away


@dataclass
class _Anchor:
    x: float
    y: float
    kind: str
    seen_at: float


class Watcher:
    """``feed(observation)`` -> decisions; ``spots()`` names what to ask the detector."""

    def __init__(self, settings: WatchSettings | None = None) -> None:
        self.settings = settings or WatchSettings()
        self.state = "moving"  # moving | rest
        self.sure = True
        self.expected: int | None = None  # balls seen at the last rest
        self._anchor: list[_Anchor] = []
        self._anchor_at: float | None = None
        self._spots: dict[int, _Spot] = {}
        self._newcomers: list[_Anchor] = []
        self._next_id = 1
        self._history: deque[Observation] = deque(maxlen=45)
        self._quality_since: float | None = None  # since when quality is on the other side
        self._low = False

    @property
    def radius(self) -> float:
        return self.settings.ball_mm / 2

    def spots(self) -> dict[int, tuple[float, float]]:
        """The resting balls' spots the next observation should say are bare felt or not."""
        return {s.id: (s.x, s.y) for s in self._spots.values()}

    # -- the one entry point ---------------------------------------------------------------
    def feed(self, obs: Observation) -> list[Decision]:
        out: list[Decision] = []
        self._history.append(obs)
        change = self._judge_quality(obs)
        if change is not None:
            out.append(change)
            if isinstance(change, Unsure):
                self._reset()
        if not self.sure:
            return out
        if self.state == "moving":
            rest = self._watch_for_rest(obs)
            if rest is not None:
                out.append(rest)
        else:
            strike = self._watch_for_strike(obs)
            if strike is not None:
                out.append(strike)
        return out

    def _reset(self) -> None:
        self.state = "moving"
        self._anchor = []
        self._anchor_at = None
        self._spots = {}
        self._newcomers = []

    # -- sure or not ------------------------------------------------------------------------
    def _judge_quality(self, obs: Observation) -> Decision | None:
        s = self.settings
        low = obs.quality < s.quality_low
        if low != self._low:
            self._low = low
            self._quality_since = obs.at
        since = self._quality_since if self._quality_since is not None else obs.at
        if self.sure and low and obs.at - since >= s.unsure_ms:
            self.sure = False
            return Unsure(obs.at, "the bed is not seen well enough (covered, dark or cluttered)")
        if not self.sure and not low and obs.at - since >= s.sure_ms:
            self.sure = True
            return Sure(obs.at)
        return None

    # -- moving -> rest ---------------------------------------------------------------------
    def _watch_for_rest(self, obs: Observation) -> Rest | None:
        s = self.settings
        anchor = self._anchor
        matched: set[int] = set()
        for ball in obs.balls:
            i = _nearest(anchor, ball, s.still_mm)
            if i is None:
                self._re_anchor(obs)
                return None
            matched.add(i)
        for i in matched:
            anchor[i].seen_at = obs.at
        assert self._anchor_at is not None or not anchor
        if self._anchor_at is None:
            self._re_anchor(obs)
            return None
        still = obs.at - self._anchor_at
        seen = [a for a in anchor if a.seen_at >= self._anchor_at]
        if still < s.rest_ms or not seen:
            return None
        if self.expected is not None and len(seen) < self.expected and still < s.recount_ms:
            return None  # a ball still rolling unseen, or hidden: wait (or recount later)
        self.expected = len(seen)
        self.state = "rest"
        self._spots = {}
        for a in seen:
            self._add_spot(a.x, a.y, a.kind, obs.at)
        self._newcomers = []
        return Rest(self._anchor_at, obs.at, len(seen))

    def _re_anchor(self, obs: Observation) -> None:
        keep = [a for a in self._anchor
                if obs.at - a.seen_at <= 500
                and all(math.hypot(a.x - b.x, a.y - b.y) > 2 * self.radius for b in obs.balls)]
        self._anchor = [_Anchor(b.x, b.y, b.kind, obs.at) for b in obs.balls] + keep
        self._anchor_at = obs.at

    def _add_spot(self, x: float, y: float, kind: str, at: float) -> None:
        self._spots[self._next_id] = _Spot(self._next_id, x, y, kind, at)
        self._next_id += 1

    # -- rest -> strike ---------------------------------------------------------------------
    def _watch_for_strike(self, obs: Observation) -> Strike | None:
        s = self.settings
        r = self.radius
        spots = list(self._spots.values())
        # balls away from every spot: a ball that left its spot, a newcomer, or a false one
        away = [b for b in obs.balls
                if all(math.hypot(b.x - p.x, b.y - p.y) > 0.3 * r for p in spots)]
        for b in obs.balls:
            for p in spots:
                if b.kind == p.kind and math.hypot(b.x - p.x, b.y - p.y) <= 0.3 * r:
                    p.seen_at = obs.at
        confirmed: list[_Spot] = []
        for p in spots:
            felt = obs.spots_felt.get(p.id, 0.0)
            mover = None
            if felt >= s.vacated:
                reach = s.max_speed * (obs.at - p.seen_at) + r
                candidates = [(math.hypot(b.x - p.x, b.y - p.y), b) for b in away
                              if b.kind == p.kind]
                candidates = [c for c in candidates if c[0] <= reach]
                if candidates:
                    mover = min(candidates, key=lambda c: c[0])
            if mover is None:
                p.evidence.clear()
                continue
            distance, ball = mover
            if p.evidence and distance <= p.evidence[-1][1]:
                p.evidence.clear()  # not running away from the spot: not (yet) a strike
            p.evidence.append((obs.at, distance, ball.x, ball.y))
            if len(p.evidence) >= 2:
                confirmed.append(p)
        self._welcome_newcomers(obs, away)
        if not confirmed:
            return None
        strikes = [self._timed(p, obs.at) for p in confirmed]
        strike = min(strikes, key=lambda st: st.estimate)
        self.state = "moving"
        self._spots = {}
        self._anchor = []
        self._anchor_at = None
        return strike

    def _welcome_newcomers(self, obs: Observation, away: list[Detection]) -> None:
        """A still ball that was hidden at the rest (under an arm) joins the spots once it
        has been still for ``rest_ms``."""
        s = self.settings
        fresh: list[_Anchor] = []
        for b in away:
            old = _nearest(self._newcomers, b, s.still_mm)
            if old is None:
                fresh.append(_Anchor(b.x, b.y, b.kind, obs.at))
                continue
            known = self._newcomers[old]
            if obs.at - known.seen_at >= s.rest_ms:
                self._add_spot(known.x, known.y, known.kind, obs.at)
            else:
                fresh.append(known)
        self._newcomers = fresh

    def _timed(self, spot: _Spot, now: float) -> Strike:
        """When did the ball leave ``spot``? Its path back through the recent frames."""
        s = self.settings
        r = self.radius
        last_at, last_d, lx, ly = spot.evidence[-1]
        ux, uy = (lx - spot.x) / last_d, (ly - spot.y) / last_d
        path: list[tuple[float, float]] = [(last_at, last_d)]
        frames = [o for o in self._history if o.at < last_at]
        bound = last_d
        for obs in reversed(frames):
            best = None
            for b in obs.balls:
                if b.kind != spot.kind:
                    continue
                dx, dy = b.x - spot.x, b.y - spot.y
                across = abs(-dx * uy + dy * ux)
                d = math.hypot(dx, dy)
                if across <= 0.5 * r and d < bound + 0.5 and (best is None or d > best):
                    best = d
            if best is None:
                continue
            if best <= 1.0:  # on the spot, within the measurement's noise
                break
            path.append((obs.at, best))
            bound = best
        path.reverse()
        moving = [(t, d) for t, d in path if d >= s.still_mm]
        estimate: float
        if len(moving) >= 2:
            (t1, d1), (t2, d2) = moving[0], moving[1]
            speed = (d2 - d1) / (t2 - t1) if t2 > t1 else 0.0
            estimate = t1 - d1 / speed if speed > 0 else t1
        else:
            estimate = moving[0][0] if moving else last_at
        # the first frame captured after the start, never after the first seen moving
        first_moved = moving[0][0] if moving else last_at
        at = first_moved
        for obs in self._history:
            if estimate - s.early_ms <= obs.at <= first_moved:
                at = obs.at
                break
        return Strike(at, now, spot.kind, (spot.x, spot.y), estimate)


def _nearest(anchors: list[_Anchor], ball: Detection, within: float) -> int | None:
    best, best_d = None, within
    for i, a in enumerate(anchors):
        if a.kind != ball.kind:
            continue
        d = math.hypot(a.x - ball.x, a.y - ball.y)
        if d <= best_d:
            best, best_d = i, d
    return best
