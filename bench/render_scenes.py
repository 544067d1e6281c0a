"""Overhead videos of a Russian-billiards table made by software this project did not write
(issue 37 point 6): the balls' motion simulated by pooltool (a billiards physics engine:
sliding, rolling, spin, cushions, pockets), every frame rendered in 3-D by Panda3D
(perspective camera, lamps with shadow maps, Phong shading) offscreen with Mesa's
software GL (llvmpipe over EGL). Nothing of harness/synthetic.py or harness/scenes.py is
used, nor anything of the detector.

- The table: a 12-ft Russian pyramid table (bed 3550 x 1775 mm inside the cushions,
  balls of 68 mm and 280 g, corner pockets 73 mm and side pockets 82 mm wide), built for
  pooltool from its ``PocketTableSpecs``; drawn as a felt bed, cushions, wooden rails and
  six pocket holes.
- The balls: 15 whites (pooltool's ball model, tinted white to aged ivory) and the
  coloured cue ball, spread, touching in pairs and triples, or racked for the break.
- The players: a cue (a tapered shaft), a bridge hand, forearms, a body and a head (simple
  3-D shapes), approaching, practice strokes over the balls, the stroke, leaving while the
  balls roll; a passer-by leaning over the far end; a hand resting on the table.
- Conditions: cloth colour, ball tint, lamps (count, height, warmth), camera height,
  tilt and roll, lens barrel distortion, frame size and rate, sensor noise, white-balance
  drift, rolling shutter (rows read over ``readout`` ms: each band of rows rendered at its
  own instant), motion blur, MJPEG quality.

Truth, in ms from the first frame (frame k is captured at k * 1000 / fps): ``strikes``
(the cue meets the ball: pooltool's shot start), ``rests`` (pooltool's last
stationary event of the shot; 0 for the opening position), ``moving`` (strike to rest),
``busy`` (a person over the table), ``corners`` (the bed's corners in the frame, through
the same lens), ``balls``.

Run once, in its own environment (not part of ``make test``: Panda3D is 50 MB, a clip
takes minutes of CPU)::

    python3.11 -m venv /tmp/render-venv
    /tmp/render-venv/bin/pip install -r bench/render-requirements.txt
    apt-get install -y libegl1 libgl1-mesa-dri   # Mesa's llvmpipe, if not there yet
    /tmp/render-venv/bin/python bench/render_scenes.py --out bench/results/pooltool

It writes ``<name>.avi`` (MJPEG, as a USB webcam sends) and ``<name>.json`` (the truth
and the condition) per condition; ``bench/camera_pooltool.py`` scores the camera on them.
Conditions whose name starts with ``p_h_`` are the held-out part: measured, never tuned on.
Deterministic for a given pooltool and Panda3D version: every random choice is seeded.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

TABLE = (3.550, 1.775)  # m, inside the cushions: long side (our x), short side (our y)
R = 0.034
CUSHION = 0.045
RAIL = 0.13

FELTS = {"green": (0.10, 0.42, 0.16), "blue": (0.08, 0.25, 0.55), "grey-blue": (0.30, 0.36, 0.45),
         "olive": (0.28, 0.36, 0.14), "burgundy": (0.45, 0.08, 0.10)}
TINTS = {"white": (1.0, 1.0, 1.0), "ivory": (1.0, 0.95, 0.83), "aged": (0.95, 0.85, 0.65)}
SLEEVES = [(0.12, 0.12, 0.14), (0.85, 0.85, 0.88), (0.35, 0.12, 0.12), (0.20, 0.30, 0.55)]
SKIN = (0.85, 0.65, 0.52)


@dataclass(frozen=True)
class Condition:
    name: str
    seed: int
    felt: str = "green"
    tint: str = "white"
    coloured: str = "red"  # red | yellow: the cue ball's model
    lamps: int = 3  # lamps over the table, in a row
    lamp_height: float = 1.0  # m above the bed
    warm: float = 0.0  # 0 neutral .. 1 warm (tungsten) light
    ambient: float = 0.25
    cam_height: float = 3.4  # m above the bed
    tilt: float = 4.0  # degrees
    roll: float = 0.0  # degrees
    k1: float = 0.0  # barrel distortion (negative)
    size: tuple[int, int] = (1280, 720)
    fps: float = 30.0
    noise: float = 2.0
    wb_drift: float = 0.0  # white balance: channel gains drifting by this much
    readout: float = 0.0  # rolling shutter: ms from the top row to the bottom one
    blur: int = 1  # renders averaged over the exposure (motion blur)
    quality: int = 75  # MJPEG
    layout: str = "spread"  # spread | touching | rack
    shots: int = 3
    soft: bool = False  # soft shots: slow roll-outs
    passer_by: bool = False
    hand_rest: bool = False  # a hand left resting on the cloth near balls


_BASE = Condition("base", 1)
# Looked at while changing the camera (may be tuned on).
TUNING: list[Condition] = [
    replace(_BASE, name="p_t_green_white_touching", seed=11, layout="touching"),
    replace(_BASE, name="p_t_blue_ivory_warm_soft", seed=12, felt="blue", tint="ivory",
            warm=0.7, soft=True, lamps=2),
    replace(_BASE, name="p_t_green_rack_break", seed=13, layout="rack", shots=2),
    replace(_BASE, name="p_t_olive_aged_lens_480p", seed=14, felt="olive", tint="aged",
            k1=-0.12, tilt=12, size=(640, 480), fps=25, hand_rest=True),
]
# Never tuned on: measured only (seeds 9101-9104).
HELD_OUT: list[Condition] = [
    replace(_BASE, name="p_h_greyblue_spot_rolling_wb_passer", seed=9101, felt="grey-blue",
            lamps=1, lamp_height=1.4, readout=25.0, wb_drift=0.08, passer_by=True,
            tint="ivory", layout="touching"),
    replace(_BASE, name="p_h_burgundy_yellow_1080p_soft", seed=9102, felt="burgundy",
            coloured="yellow", size=(1920, 1080), soft=True, tilt=8, roll=3),
    replace(_BASE, name="p_h_green_aged_rack_blur_dim", seed=9103, tint="aged", layout="rack",
            shots=2, ambient=0.15, lamp_height=1.2, blur=3, noise=4.0, quality=55),
    replace(_BASE, name="p_h_blue_white_widelens_hand", seed=9104, felt="blue", k1=-0.2,
            tilt=15, roll=-4, hand_rest=True, warm=0.4, layout="touching"),
]
CONDITIONS = {c.name: c for c in TUNING + HELD_OUT}


# ---- physics (pooltool) -------------------------------------------------------------------

@dataclass
class Shot:
    strike: float  # s on the clip's timeline
    stop: float
    cue: str
    direction: tuple[float, float]  # in our bed coordinates (x long), unit
    # (t, {ball: (x, y)}) in our bed coordinates (m), from the strike on; pocketed: None
    path: list[tuple[float, dict[str, tuple[float, float] | None]]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # the path's times, for bisect


def russian_table() -> Any:
    import pooltool as pt
    from pooltool.objects.table.specs import PocketTableSpecs

    specs = PocketTableSpecs(
        l=TABLE[0], w=TABLE[1], cushion_width=CUSHION, cushion_height=0.9 * R * 1.2,
        corner_pocket_width=0.073, corner_pocket_radius=0.045, corner_pocket_depth=0.03,
        side_pocket_width=0.082, side_pocket_radius=0.05, side_pocket_depth=0.01)
    return pt.Table.from_table_specs(specs)


def opening(cond: Condition, rng: random.Random) -> dict[str, tuple[float, float]]:
    """Ball id -> (x, y) in our bed coordinates (m): x along the long side."""
    w, h = TABLE
    out: dict[str, tuple[float, float]] = {}
    d = 2 * R + 0.0004
    if cond.layout == "rack":
        apex = (w * 0.72, h / 2)
        k = 0
        for row in range(5):
            for i in range(row + 1):
                k += 1
                out[f"w{k:02d}"] = (apex[0] + row * d * math.sqrt(3) / 2,
                                    apex[1] + (i - row / 2) * d)
        out["cue"] = (w * 0.22, h / 2 + rng.uniform(-0.15, 0.15))
        return out
    pts: list[tuple[float, float]] = []
    while len(pts) < 16:
        p = (rng.uniform(0.25, w - 0.25), rng.uniform(0.2, h - 0.2))
        if all(math.dist(p, q) > 0.22 for q in pts):
            pts.append(p)
    if cond.layout == "touching":
        # a pair, a triple in a triangle, and one frozen on a cushion
        a = pts[1]
        ang = rng.uniform(0, 2 * math.pi)
        pts[2] = (a[0] + d * math.cos(ang), a[1] + d * math.sin(ang))
        b = pts[4]
        ang = rng.uniform(0, 2 * math.pi)
        pts[5] = (b[0] + d * math.cos(ang), b[1] + d * math.sin(ang))
        pts[6] = (b[0] + d * math.cos(ang + math.pi / 3), b[1] + d * math.sin(ang + math.pi / 3))
        pts[8] = (pts[8][0], R + 0.0005)
    for i, p in enumerate(pts):
        out["cue" if i == 0 else f"w{i:02d}"] = p
    return out


def simulate(cond: Condition, rng: random.Random) -> tuple[dict[str, tuple[float, float]],
                                                            list[Shot], list[float]]:
    """The opening position and each shot's path; the shots' start times are set by the
    timeline (``Shot.strike`` is relative here: 0)."""
    import pooltool as pt

    table = russian_table()
    where = opening(cond, rng)
    start = dict(where)
    shots: list[Shot] = []
    on = dict(where)
    for n in range(cond.shots):
        balls = {bid: pt.Ball.create(bid, xy=(y, x), R=R, m=0.28, u_r=0.012)
                 for bid, (x, y) in on.items()}  # pooltool: x across, y along
        # any ball may be struck (Russian pyramid); the coloured one first, or the break
        ids = sorted(balls)
        cue = "cue" if n == 0 or rng.random() < 0.5 else rng.choice(ids)
        others = [b for b in ids if b != cue]
        target = min(others, key=lambda b: math.dist(on[b], on[cue])) \
            if cond.layout == "rack" and n == 0 else rng.choice(others)
        system = pt.System(cue=pt.Cue(cue_ball_id=cue), table=table, balls=balls)
        phi = pt.aim.at_ball(system, target, cut=rng.uniform(-25, 25))
        speed = rng.uniform(0.6, 1.1) if cond.soft else rng.uniform(1.2, 3.2)
        if cond.layout == "rack" and n == 0:
            speed = rng.uniform(4.5, 6.0)
        system.strike(V0=speed, phi=phi, b=rng.uniform(-0.2, 0.3))
        pt.simulate(system, inplace=True)
        pt.continuize(system, dt=0.002, inplace=True)
        rad = math.radians(phi)
        direction = (math.sin(rad), math.cos(rad))  # pooltool phi from its x axis
        direction = (direction[0], direction[1])
        ux, uy = math.cos(rad), math.sin(rad)  # pooltool (x across, y along)
        direction = (uy, ux)  # ours: x along, y across
        shot = Shot(0.0, float(system.t), cue, direction)
        histories = {bid: b.history_cts for bid, b in system.balls.items()}
        times = [s.t for s in next(iter(histories.values())).states]
        for k, t in enumerate(times):
            pos: dict[str, tuple[float, float] | None] = {}
            for bid, hist in histories.items():
                state = hist.states[min(k, len(hist.states) - 1)]
                if state.s == 4:  # pocketed
                    pos[bid] = None
                else:
                    px, py = float(state.rvw[0][0]), float(state.rvw[0][1])
                    pos[bid] = (py, px)
            shot.path.append((float(t), pos))
            shot.times.append(float(t))
        last = shot.path[-1][1]
        on = {bid: p for bid, p in last.items() if p is not None}
        shots.append(shot)
    return start, shots, []


# ---- the picture (Panda3D) ----------------------------------------------------------------

class Stage:
    def __init__(self, cond: Condition, rng: random.Random) -> None:
        from panda3d.core import loadPrcFileData

        w, h = cond.size
        loadPrcFileData("", f"window-type offscreen\nwin-size {w} {h}\n"
                        "audio-library-name null\nsync-video 0\nnotify-level error\n"
                        "show-frame-rate-meter 0\n"
                        # pooltool's own settings ask for a core 3.2 context, which has
                        # no fixed-function lighting: everything came out unlit
                        "gl-version 2 1\n")
        from direct.showbase.ShowBase import ShowBase
        from panda3d.core import (
            AmbientLight,
            GraphicsOutput,
            Material,
            PointLight,
            RescaleNormalAttrib,
            Texture,
        )

        self.cond = cond
        self.rng = rng
        self.base = ShowBase(windowType="offscreen")
        base = self.base
        base.disableMouse()
        self.tex = Texture()
        base.win.addRenderTexture(self.tex, GraphicsOutput.RTMCopyRam)
        render = base.render
        # fixed-function (Gouraud) lighting: Panda3D's shader generator lights nothing on
        # llvmpipe here (ambient only), and simplepbr 0.13 fails its shader inputs; the
        # balls' shadows are pooltool's own shadow model (as pooltool draws them)
        render.setAttrib(RescaleNormalAttrib.make(RescaleNormalAttrib.MNormalize))
        base.setBackgroundColor(0.16, 0.15, 0.15, 1)
        self.W, self.H = TABLE
        self.lamps: list[tuple[float, float]] = []
        warm = cond.warm
        colour = (1.0, 1.0 - 0.12 * warm, 1.0 - 0.35 * warm, 1)
        amb = AmbientLight("ambient")
        amb.setColor((cond.ambient * colour[0], cond.ambient * colour[1],
                      cond.ambient * colour[2], 1))
        render.setLight(render.attachNewNode(amb))
        for i in range(cond.lamps):
            # a lamp: a point light (Panda3D's fixed-function spotlights lit nothing here
            # but the one under the first lamp)
            lamp = PointLight(f"lamp{i}")
            strength = 1.3 / cond.lamps ** 0.6  # white balls just short of white: shaded
            lamp.setColor((strength * colour[0], strength * colour[1], strength * colour[2], 1))
            lamp.setAttenuation((1, 0, 0.25))
            node = render.attachNewNode(lamp)
            x = self.W * (i + 1) / (cond.lamps + 1) + rng.uniform(-0.1, 0.1)
            node.setPos(x, self.H / 2 + rng.uniform(-0.08, 0.08), cond.lamp_height)
            render.setLight(node)
            self.lamps.append((x, self.H / 2))
        self._material = Material
        self.static = render.attachNewNode("table")
        self._table()
        self.static.flattenStrong()  # one batch for the software rasteriser, not 700
        self._camera()
        self.balls: dict[str, Any] = {}
        self.shadows: dict[str, Any] = {}
        self.people: dict[str, Any] = {}

    # -- shapes -----------------------------------------------------------------------------
    def _box(self, x0: float, y0: float, z0: float, x1: float, y1: float, z1: float,
             rgb: tuple[float, float, float], shine: float = 0.0) -> Any:
        node = self.base.loader.loadModel("models/box")
        node.reparentTo(self.static)
        node.setPos(x0, y0, z0)
        node.setScale(x1 - x0, y1 - y0, z1 - z0)
        self._paint(node, rgb, shine)
        return node

    def _paint(self, node: Any, rgb: tuple[float, float, float], shine: float = 0.0) -> None:
        material = self._material()
        material.setDiffuse((*rgb, 1))
        material.setAmbient((*rgb, 1))
        material.setSpecular((shine, shine, shine, 1))
        material.setShininess(60 if shine else 1)
        node.setTextureOff(1)
        node.setMaterial(material, 1)
        node.setColor((*rgb, 1), 1)

    def _sphere(self, rgb: tuple[float, float, float], scale: tuple[float, float, float],
                shine: float = 0.0) -> Any:
        node = self.base.loader.loadModel("models/misc/sphere")
        node.reparentTo(self.base.render)
        node.setScale(*scale)
        self._paint(node, rgb, shine)
        return node

    def _rod(self, r0: float, r1: float, rgb: tuple[float, float, float]) -> Any:
        """A tapered rod of unit length along +y from the origin (radius r0 to r1)."""
        from panda3d.core import (
            Geom,
            GeomNode,
            GeomTriangles,
            GeomVertexData,
            GeomVertexFormat,
            GeomVertexWriter,
        )

        data = GeomVertexData("rod", GeomVertexFormat.getV3n3(), Geom.UHStatic)
        vw, nw = GeomVertexWriter(data, "vertex"), GeomVertexWriter(data, "normal")
        sides = 16
        for end, rad in ((0.0, r0), (1.0, r1)):
            for i in range(sides):
                a = 2 * math.pi * i / sides
                vw.addData3(rad * math.cos(a), end, rad * math.sin(a))
                nw.addData3(math.cos(a), 0, math.sin(a))
        tris = GeomTriangles(Geom.UHStatic)
        for i in range(sides):
            j = (i + 1) % sides
            tris.addVertices(i, j, sides + i)
            tris.addVertices(j, sides + j, sides + i)
        geom = Geom(data)
        geom.addPrimitive(tris)
        gnode = GeomNode("rod")
        gnode.addGeom(geom)
        node = self.base.render.attachNewNode(gnode)
        node.setTwoSided(True)
        self._paint(node, rgb, 0.2)
        return node

    def _table(self) -> None:
        cond = self.cond
        felt = FELTS[cond.felt]
        w, h = self.W, self.H
        # the bed in tiles: fixed-function light is computed at vertices, so a lamp's
        # pool of light on the cloth needs vertices under it
        nx, ny = 36, 18
        for i in range(nx):
            for j in range(ny):
                self._box(w * i / nx, h * j / ny, -0.02, w * (i + 1) / nx, h * (j + 1) / ny,
                          0.0, felt)
        dark = tuple(c * 0.85 for c in felt)
        top = 0.9 * R * 1.2
        gap_c, gap_s = 0.06, 0.05  # the cushions stop short of the pockets' mouths
        for x0, x1 in ((gap_c, w / 2 - gap_s), (w / 2 + gap_s, w - gap_c)):
            self._box(x0, -CUSHION, 0, x1, 0, top, dark)  # type: ignore[arg-type]
            self._box(x0, h, 0, x1, h + CUSHION, top, dark)  # type: ignore[arg-type]
        self._box(-CUSHION, gap_c, 0, 0, h - gap_c, top, dark)  # type: ignore[arg-type]
        self._box(w, gap_c, 0, w + CUSHION, h - gap_c, top, dark)  # type: ignore[arg-type]
        wood = (0.36, 0.20, 0.09)
        m = CUSHION + RAIL
        self._box(-m, -m, 0, w + m, -CUSHION, top + 0.01, wood, 0.3)
        self._box(-m, h + CUSHION, 0, w + m, h + m, top + 0.01, wood, 0.3)
        self._box(-m, -CUSHION, 0, -CUSHION, h + CUSHION, top + 0.01, wood, 0.3)
        self._box(w + CUSHION, -CUSHION, 0, w + m, h + CUSHION, top + 0.01, wood, 0.3)
        for px, py, rad in ((0, 0, 0.07), (w / 2, -0.02, 0.065), (w, 0, 0.07), (0, h, 0.07),
                            (w / 2, h + 0.02, 0.065), (w, h, 0.07)):
            hole = self._sphere((0.02, 0.02, 0.02), (rad, rad, 0.002))
            hole.setPos(px, py, top + 0.012)
            hole.reparentTo(self.static)
        spot = self._sphere((0.9, 0.9, 0.9), (0.006, 0.006, 0.0005))
        spot.setPos(w * 0.75, h / 2, 0.0005)
        spot.reparentTo(self.static)

    def _camera(self) -> None:
        from panda3d.core import PerspectiveLens

        cond = self.cond
        w, h = self.W, self.H
        rng = self.rng
        yaw = rng.uniform(0, 2 * math.pi)
        tilt = math.radians(cond.tilt)
        off = cond.cam_height * math.tan(tilt)
        cx, cy = w / 2 + off * math.cos(yaw), h / 2 + off * math.sin(yaw)
        cam = self.base.camera
        cam.setPos(cx, cy, cond.cam_height)
        cam.lookAt(w / 2, h / 2, 0)
        cam.setR(cam.getR() + cond.roll)
        # the image's x along the table's long side, whichever way it looks
        lens = PerspectiveLens()
        fw, fh = cond.size
        lens.setAspectRatio(fw / fh)
        lens.setNearFar(0.1, 20)
        self.base.cam.node().setLens(lens)
        # the field of view that fits the table and its rails in about 90 % of the frame
        m = CUSHION + RAIL
        outer = [(-m, -m), (w + m, -m), (w + m, h + m), (-m, h + m)]
        for fov in np.arange(20, 120, 0.25):
            lens.setFov(float(fov))
            pts = [self.project((x, y, 0.0), distort=False) for x, y in outer]
            if all(p is not None and 0.05 * fw <= p[0] <= 0.95 * fw
                   and 0.05 * fh <= p[1] <= 0.95 * fh for p in pts):
                break
        # rotate so that the table's long side runs across the frame
        pts = [self.project((x, 0.0, 0.0), distort=False) for x in (0.0, w)]
        if pts[0] is not None and pts[1] is not None:
            dx, dy = pts[1][0] - pts[0][0], pts[1][1] - pts[0][1]
            if abs(dy) > abs(dx):
                cam.setR(cam.getR() + 90)
                for fov in np.arange(20, 120, 0.25):
                    lens.setFov(float(fov))
                    got = [self.project((x, y, 0.0), distort=False) for x, y in outer]
                    if all(p is not None and 0.05 * fw <= p[0] <= 0.95 * fw
                           and 0.05 * fh <= p[1] <= 0.95 * fh for p in got):
                        break

    def project(self, point: tuple[float, float, float], distort: bool = True
                ) -> tuple[float, float] | None:
        """A world point (m) -> frame pixels, through the lens's distortion."""
        from panda3d.core import Point2, Point3

        p = self.base.cam.getRelativePoint(self.base.render, Point3(*point))
        out = Point2()
        if not self.base.cam.node().getLens().project(p, out):
            return None
        fw, fh = self.cond.size
        x, y = (out[0] + 1) / 2 * fw, (1 - out[1]) / 2 * fh
        if distort and self.cond.k1:
            x, y = distort_point(x, y, self.cond)
        return x, y

    # -- the balls and the people -----------------------------------------------------------
    def add_ball(self, bid: str) -> None:
        """A ball: Panda3D's sphere model, shiny, lit by the lamps (pooltool's own glTF
        ball models come out unlit under fixed-function lighting), with a soft shadow on
        the cloth away from the nearest lamp."""
        from panda3d.core import TransparencyAttrib

        colour = (0.75, 0.08, 0.06) if self.cond.coloured == "red" else (0.85, 0.7, 0.1)
        if bid != "cue":
            colour = tuple(0.85 * c for c in TINTS[self.cond.tint])  # type: ignore[assignment]
        node = self._sphere(colour, (R, R, R), 0.7)  # type: ignore[arg-type]
        self.balls[bid] = node
        shadow = self.base.loader.loadModel("models/misc/sphere")
        shadow.reparentTo(self.base.render)
        shadow.setScale(1.05 * R, 1.05 * R, 0.0004)
        shadow.setLightOff(1)
        shadow.setTextureOff(1)
        shadow.setTransparency(TransparencyAttrib.MAlpha)
        shadow.setColor((0, 0, 0, 0.45), 1)
        self.shadows[bid] = shadow

    def place_balls(self, where: dict[str, tuple[float, float] | None]) -> None:
        for bid, node in self.balls.items():
            p = where.get(bid)
            shadow = self.shadows[bid]
            if p is None:
                node.hide()
                shadow.hide()
            else:
                node.show()
                node.setPos(p[0], p[1], R)
                shadow.show()
                # away from the nearest lamp, by the ball's height over the lamp's
                lx, ly = min(self.lamps, key=lambda q: math.dist(q, p))
                k = R / max(0.2, self.cond.lamp_height - R)
                shadow.setPos(p[0] + (p[0] - lx) * k, p[1] + (p[1] - ly) * k, 0.0008)

    def person(self, key: str, parts: list[tuple[str, Any]]) -> None:
        """Create a person's parts once: (name, node) pairs kept under ``key``."""
        self.people[key] = dict(parts)

    def render(self) -> np.ndarray:
        self.base.graphicsEngine.renderFrame()
        data = self.tex.getRamImageAs("BGR")
        img = np.frombuffer(bytes(data), np.uint8).reshape(self.tex.getYSize(),
                                                           self.tex.getXSize(), 3)
        return np.ascontiguousarray(img[::-1])


def distort_point(x: float, y: float, cond: Condition) -> tuple[float, float]:
    """Where a barrel lens (k1 < 0) puts an undistorted pixel (fixed-point inverse)."""
    fw, fh = cond.size
    c = np.array([fw / 2, fh / 2])
    diag = math.hypot(fw, fh) / 2
    u = (np.array([x, y]) - c) / diag
    d = u.copy()
    for _ in range(30):
        d = u / (1 + cond.k1 * float((d ** 2).sum()))
    out = d * diag + c
    return float(out[0]), float(out[1])


def distort_maps(cond: Condition) -> tuple[np.ndarray, np.ndarray] | None:
    if not cond.k1:
        return None
    fw, fh = cond.size
    yy, xx = np.mgrid[0:fh, 0:fw].astype(np.float32)
    diag = math.hypot(fw, fh) / 2
    dx, dy = (xx - fw / 2) / diag, (yy - fh / 2) / diag
    s = 1 + cond.k1 * (dx * dx + dy * dy)
    return ((dx * s * diag + fw / 2).astype(np.float32),
            (dy * s * diag + fh / 2).astype(np.float32))


# ---- the clip -----------------------------------------------------------------------------

class Clip:
    """The clip's timeline: the opening still, each shot's approach (practice strokes), the
    strike, the balls rolling (pooltool's path), the next shot after a pause."""

    def __init__(self, cond: Condition) -> None:
        self.cond = cond
        self.rng = random.Random(cond.seed)
        self.start, shots, _ = simulate(cond, self.rng)
        t = 1.2 + self.rng.uniform(0, 0.4)
        self.truth: dict[str, Any] = {"fps": cond.fps, "size": list(cond.size), "rests": [0.0],
                                      "strikes": [], "moving": [], "busy": [], "placements": [],
                                      "balls": len(self.start)}
        self.shots: list[Shot] = []
        for shot in shots:
            approach = t
            strike = t + self.rng.uniform(2.0, 2.8)
            shot.strike = strike
            shot.stop = strike + shot.stop
            self.shots.append(shot)
            self.truth["strikes"].append(round(strike * 1000, 3))
            self.truth["rests"].append(round(shot.stop * 1000, 3))
            self.truth["moving"].append([round(strike * 1000, 3), round(shot.stop * 1000, 3)])
            self.truth["busy"].append([round(approach * 1000), round((strike + 0.9) * 1000)])
            t = shot.stop + self.rng.uniform(1.0, 1.6)
        self.end = t + 0.3
        self.truth["duration"] = round(self.end * 1000, 3)
        self.passer = (self.rng.uniform(0.5, max(0.6, self.end - 3.0)), 2.2) \
            if cond.passer_by else None
        if self.passer is not None:
            a, d = self.passer
            self.truth["busy"].append([round(a * 1000), round((a + d) * 1000)])

    def positions(self, t: float) -> dict[str, tuple[float, float] | None]:
        where: dict[str, tuple[float, float] | None] = dict(self.start)  # type: ignore[arg-type]
        for shot in self.shots:
            if t < shot.strike:
                break
            u = t - shot.strike
            path = shot.path
            # linear between the two samples around u
            k = max(0, min(len(path) - 1, bisect.bisect_right(shot.times, u) - 1))
            t0, p0 = path[k]
            t1, p1 = path[min(k + 1, len(path) - 1)]
            f = 0.0 if t1 <= t0 else min(1.0, max(0.0, (u - t0) / (t1 - t0)))
            where = {}
            for bid in p0:
                a, b = p0[bid], p1.get(bid)
                if a is None or b is None:
                    where[bid] = a if b is None and f < 0.5 else b
                    continue
                where[bid] = (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f)
        return where

    def player(self, t: float, where: dict[str, tuple[float, float] | None]
               ) -> dict[str, Any] | None:
        """The player's pose at ``t`` (None: nobody at the table): the cue's tip and
        direction, the bridge hand, the body."""
        for shot in self.shots:
            approach = shot.strike - 2.4
            if approach <= t <= shot.strike + 0.9:
                ball = self.positions(shot.strike - 1e-6)[shot.cue]
                if ball is None:
                    return None
                d = shot.direction
                if t < approach + 0.6:
                    gap = 0.6 - 0.5 * (t - approach) / 0.6
                elif t < shot.strike - 0.25:
                    gap = max(0.025, 0.10 - 0.07 * math.cos(2 * math.pi * (t - approach - 0.6)
                                                            / 0.55))
                elif t < shot.strike:
                    gap = 0.15 * (shot.strike - t) / 0.25
                elif t < shot.strike + 0.2:
                    gap = -min(0.06, (t - shot.strike) * 0.6)
                else:
                    gap = -0.06 + (t - shot.strike - 0.2) * 1.0
                leave = max(0.0, t - shot.strike - 0.3) * 1.2  # the body leaves
                return {"ball": ball, "d": d, "gap": gap, "leave": leave}
        return None


def render_clip(cond: Condition, out: Path) -> dict[str, Any]:
    import cv2

    clip = Clip(cond)
    stage = Stage(cond, random.Random(cond.seed + 1))
    for bid in clip.start:
        stage.add_ball(bid)
    w, h = TABLE
    sleeve = SLEEVES[cond.seed % len(SLEEVES)]
    cue_shaft = stage._rod(0.0065, 0.012, (0.82, 0.68, 0.45))
    cue_butt = stage._rod(0.012, 0.016, (0.12, 0.08, 0.06))
    bridge = stage._sphere(SKIN, (0.05, 0.04, 0.025))
    fore1 = stage._rod(0.035, 0.045, sleeve)
    fore2 = stage._rod(0.035, 0.045, sleeve)
    body = stage._sphere(sleeve, (0.28, 0.18, 0.14))
    head = stage._sphere((0.25, 0.18, 0.12), (0.1, 0.1, 0.11))
    parts = [cue_shaft, cue_butt, bridge, fore1, fore2, body, head]
    passer = [stage._sphere(SLEEVES[(cond.seed + 2) % 4], (0.3, 0.2, 0.15)),
              stage._sphere((0.2, 0.15, 0.1), (0.1, 0.1, 0.11)),
              stage._rod(0.04, 0.05, SLEEVES[(cond.seed + 2) % 4])]
    resting = None
    if cond.hand_rest:
        resting = [stage._sphere(SKIN, (0.06, 0.045, 0.028)),
                   stage._rod(0.04, 0.05, SLEEVES[(cond.seed + 3) % 4])]
    rest_at = (w * 0.35, h - 0.18)  # a hand on the cloth by the far cushion
    truth = dict(clip.truth)
    if resting is not None:
        truth["busy"].append([0, round(clip.end * 1000)])
    corners = [stage.project((x, y, 0.0)) for x, y in ((0, 0), (w, 0), (w, h), (0, h))]
    truth["corners"] = [[round(p[0], 2), round(p[1], 2)] for p in corners if p is not None]
    maps = distort_maps(cond)
    nrng = np.random.default_rng(cond.seed)
    fw, fh = cond.size
    writer = cv2.VideoWriter(str(out.with_suffix(".avi")), cv2.VideoWriter_fourcc(*"MJPG"),
                             cond.fps, (fw, fh))
    writer.set(cv2.VIDEOWRITER_PROP_QUALITY, float(cond.quality))
    period = 1.0 / cond.fps
    frames = int(clip.end / period) + 1
    started = time.monotonic()

    def pose(t: float) -> None:
        where = clip.positions(t)
        stage.place_balls(where)
        now = clip.player(t, where)
        if now is None:
            for p in parts:
                p.hide()
        else:
            for p in parts:
                p.show()
            bx, by = now["ball"]
            dx, dy = now["d"]
            tip = (bx - dx * (R + now["gap"]), by - dy * (R + now["gap"]), R + 0.006)
            length, butt_len = 0.95, 0.5
            elev = math.radians(6)
            heading = math.degrees(math.atan2(-dx, dy))  # the rod runs along +y
            for node, start, ln in ((cue_shaft, 0.0, length), (cue_butt, length, butt_len)):
                sx = tip[0] - dx * start * math.cos(elev)
                sy = tip[1] - dy * start * math.cos(elev)
                sz = tip[2] + start * math.sin(elev)
                node.setPos(sx, sy, sz)
                node.setHpr(heading + 180, -math.degrees(elev) * -1, 0)
                node.setScale(1, ln, 1)
            bridge_at = (bx - dx * (R + 0.25), by - dy * (R + 0.25))
            leave = now["leave"]
            bx2, by2 = bridge_at[0] - dx * leave, bridge_at[1] - dy * leave
            bridge.setPos(bx2, by2, 0.03)
            bridge.setH(heading)
            side = (-dy, dx)
            shoulder = (bx2 - dx * 0.75 + side[0] * 0.22, by2 - dy * 0.75 + side[1] * 0.22, 0.55)
            for node, a, b in ((fore1, (bx2, by2, 0.05), shoulder),
                               (fore2, (tip[0] - dx * 1.2, tip[1] - dy * 1.2, 0.2),
                                (shoulder[0] - side[0] * 0.4, shoulder[1] - side[1] * 0.4,
                                 0.55))):
                _between(node, a, b)
            centre = (bx2 - dx * 1.0, by2 - dy * 1.0)
            body.setPos(centre[0], centre[1], 0.75)
            body.setH(heading)
            head.setPos(centre[0] + dx * 0.25, centre[1] + dy * 0.25, 0.95)
        if clip.passer is None:
            for p in passer:
                p.hide()
        else:
            a, dur = clip.passer
            f = (t - a) / dur
            show = 0 <= f <= 1
            for p in passer:
                (p.show if show else p.hide)()
            if show:
                x = -0.3 + (w + 0.6) * f
                y = h + 0.25 - 0.25 * math.sin(math.pi * f)
                passer[0].setPos(x, y, 0.85)
                passer[1].setPos(x, y - 0.05, 1.05)
                _between(passer[2], (x, y - 0.1, 0.8), (x + 0.2, y - 0.45, 0.35))
        if resting is not None:
            resting[0].setPos(rest_at[0], rest_at[1], 0.028)
            _between(resting[1], (rest_at[0], rest_at[1] + 0.03, 0.04),
                     (rest_at[0] + 0.1, h + 0.5, 0.5))

    for k in range(frames):
        t = k * period
        if cond.readout > 0:
            bands = 3
            img = np.zeros((fh, fw, 3), np.float32)
            for b in range(bands):
                tb = t + (b + 0.5) / bands * cond.readout / 1000 - cond.readout / 2000
                pose(tb)
                shot = stage.render()
                r0, r1 = b * fh // bands, (b + 1) * fh // bands
                img[r0:r1] = shot[r0:r1]
        else:
            acc = np.zeros((fh, fw, 3), np.float32)
            for s in range(cond.blur):
                ts = t + ((s + 0.5) / cond.blur - 0.5) * period * 0.6 if cond.blur > 1 else t
                pose(ts)
                acc += stage.render()
            img = acc / cond.blur
        if maps is not None:
            img = cv2.remap(img, maps[0], maps[1], cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=(20, 20, 20))
        if cond.wb_drift:
            gains = 1 + cond.wb_drift * np.array([math.sin(0.7 * t), math.sin(0.45 * t + 1),
                                                  math.sin(0.3 * t + 2)])
            img = img * gains[None, None, :]
        img = img + nrng.normal(0, cond.noise, img.shape)
        writer.write(np.clip(img, 0, 255).astype(np.uint8))
        if k % 60 == 0:
            print(f"  {cond.name}: frame {k}/{frames} ({time.monotonic() - started:.0f} s)",
                  flush=True)
    writer.release()
    truth["condition"] = asdict(cond)
    truth["held_out"] = cond.name.startswith("p_h_")
    truth["renderer"] = renderer_versions()
    out.with_suffix(".json").write_text(json.dumps(truth, indent=1) + "\n")
    stage.base.destroy()
    return truth


def _between(node: Any, a: tuple[float, float, float], b: tuple[float, float, float]) -> None:
    """A unit rod (along +y) stretched from ``a`` to ``b``."""
    from panda3d.core import Point3, Vec3

    node.setPos(Point3(*a))
    length = (Vec3(*b) - Vec3(*a)).length()
    node.lookAt(Point3(*b))
    node.setScale(1, max(1e-3, length), 1)


def renderer_versions() -> dict[str, str]:
    import panda3d
    import pooltool

    out = {"pooltool": getattr(pooltool, "__version__", "?"),
           "panda3d": getattr(panda3d, "__version__", "?")}
    try:
        from panda3d.core import PandaSystem

        out["panda3d"] = PandaSystem.getVersionString()
    except ImportError:
        pass
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/pooltool"))
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--shots", type=int, default=None)
    parser.add_argument("--size", default=None, help="WxH for every condition (a quick look)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [c for c in TUNING + HELD_OUT if not args.only or c.name in args.only]
    for cond in chosen:
        if args.shots is not None:
            cond = replace(cond, shots=min(cond.shots, args.shots))
        if args.size:
            w, h = (int(v) for v in args.size.split("x"))
            cond = replace(cond, size=(w, h))
        t0 = time.monotonic()
        # each clip in a process of its own: Panda3D keeps one ShowBase per process
        import subprocess

        code = subprocess.call([sys.executable, __file__, "--one", json.dumps(asdict(cond)),
                                "--out", str(args.out)])
        print(f"{cond.name}: {'ok' if code == 0 else f'failed ({code})'} in "
              f"{time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        fields = json.loads(sys.argv[2])
        fields["size"] = tuple(fields["size"])
        one = Condition(**fields)
        out_dir = Path(sys.argv[sys.argv.index("--out") + 1])
        render_clip(one, out_dir / one.name)
        raise SystemExit(0)
    raise SystemExit(main())
