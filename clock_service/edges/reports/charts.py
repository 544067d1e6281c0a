"""The pictures of a match as SVG text, drawn on the server: no script, no font or library
from outside, the same picture on a 1920x1080 screen and on paper. Pure: a record in, text
out. Colours and styles are presentation attributes, so a picture shows the same inline in
a page, as an ``<img>``, or saved to a file.

Each mark carries a class and ``data-*`` attributes (player, count, outcome), so a test can
count the bars and points and read what they stand for:

- ``distribution``: shot-time distribution per player; one ``rect.bar`` per player and
  5-second bin with at least one shot played (``data-count``); the 20 s and 30 s marks.
- ``shots``: time used per timed attempt through the frame (or the match, frames
  separated): one ``circle.point`` per shot played, a ``path.time-foul`` cross per expiry,
  a ``circle.stop`` per clock stopped without a shot; the limit as a stepped ``path.limit``
  (35 -> 20 s steps by round), each extended shot's extra allowance as ``rect.extension``.
- ``timeline``: who was at the table, one row per frame: a ``rect.visit`` per visit, a
  ``path.foul-mark`` per foul, a ``path.ext-mark`` per extension, ``rect.pause`` per pause.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from clock_service.core.text import markup
from clock_service.edges.reports.stats import FrameRecord, MatchRecord, Shot

__all__ = ["CHARTS", "chart_svg", "distribution_svg", "shots_svg", "timeline_svg",
           "PLAYER_COLOURS", "BIN_MS"]

PLAYER_COLOURS = ("#1f63b4", "#d2691e")
LIMIT_COLOUR = "#333333"
EXTENSION_COLOUR = "#2e9b4f"
FOUL_COLOUR = "#c62828"
GRID = "#d0d0d0"
FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
BIN_MS = 5000
# Timeline ticks: the first of these that makes at most ten.
TICKS_MS = (1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
            900_000, 1_800_000, 3_600_000)
MAX_BINS = 13  # 0..60 s and "60+"

TEXT = {
    "en": {"time_s": "time used, s", "shots": "shots", "limit": "limit",
           "extension": "extension", "time_foul": "time foul", "stop": "clock stopped",
           "frame": "Frame", "min": "min", "no_timer": "no timer: no shot times (12.1)",
           "no_shots": "no timed shots yet", "foul": "foul", "pause": "pause",
           "mean": "mean", "sec": "s"},
    "ru": {"time_s": "время удара, с", "shots": "удары", "limit": "лимит",
           "extension": "продление", "time_foul": "фол по времени",
           "stop": "часы остановлены", "frame": "Партия", "min": "мин",
           "no_timer": "без таймера: времени ударов нет (12.1)",
           "no_shots": "ударов со временем пока нет", "foul": "фол", "pause": "пауза",
           "mean": "среднее", "sec": "с"},
}


def _t(lang: str, key: str) -> str:
    return TEXT.get(lang, TEXT["en"])[key]


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _dec(value: float, lang: str) -> str:
    """A figure as the reader's language writes it: "2.5" in English, "2,5" in Russian (the
    same as the pages' table and the protocol; issue 23)."""
    text = _num(value)
    return text.replace(".", ",") if lang == "ru" else text


def _svg(width: int, height: int, title: str, body: Iterable[str], kind: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'font-family="{FONT}" font-size="14" role="img" aria-label="{markup(title)}">'
            f"<title>{markup(title)}</title>"
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 14,
          colour: str = "#222222", weight: str = "normal", cls: str = "") -> str:
    extra = f' class="{cls}"' if cls else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{colour}" font-weight="{weight}"{extra}>{markup(text)}</text>')


def _legend(x: float, y: float, record: MatchRecord, extra: Sequence[tuple[str, str]] = (),
            notes: Sequence[str] = ("", ""), width: float | None = None) -> list[str]:
    """The legend's entries on one line; where long names would run past ``width``, its
    text is made smaller (down to 9 px), never cut (issue 23: a label lost on /stats)."""
    entries = [(PLAYER_COLOURS[i], f"{name}{notes[i]}") for i, name in enumerate(record.players)]
    entries += list(extra)
    size, gap, per_char = 14.0, 40.0, 8.5  # per_char: the width of a character at 14 px
    need = sum(gap + per_char * len(label) for _, label in entries)
    start = x
    if width is not None and x + need > width - 8:
        factor = max(9.0 / 14.0, (width - 8 - x) / need)
        size, gap, per_char = 14.0 * factor, gap * factor, per_char * factor
        if x + need * factor > width - 8:  # still too long at 9 px: from the left edge,
            start = x = 4.0  # and an entry that does not fit goes on the next line
    out = []
    box = round(size)
    for colour, label in entries:
        wide = gap + per_char * len(label)
        if width is not None and x > start and x + wide > width - 4:
            x, y = start, y + box + 2
        out.append(f'<rect x="{_num(x)}" y="{_num(y - box + 3)}" width="{box}" height="{box}" '
                   f'fill="{colour}"/>')
        out.append(_text(x + box + 6, y, label, size=round(size)))
        x += wide
    return out


def _frames(record: MatchRecord, frame: int | None) -> list[FrameRecord]:
    if frame is None:
        return list(record.frames)
    return [f for f in record.frames if f.number == frame]


def _empty(kind: str, title: str, message: str, width: int = 1000) -> str:
    return _svg(width, 120, title, [_text(width / 2, 66, message, anchor="middle", size=18,
                                          colour="#666666")], kind)


# -- shot-time distribution -------------------------------------------------------------------

def distribution_svg(record: MatchRecord, *, frame: int | None = None, lang: str = "en",
                     width: int = 1000, height: int = 360) -> str:
    title = _t(lang, "time_s")
    if not record.timer:
        return _empty("distribution", title, _t(lang, "no_timer"))
    shots = [s for f in _frames(record, frame) for s in f.shots
             if s.played and s.used_ms is not None]
    if not shots:
        return _empty("distribution", title, _t(lang, "no_shots"))
    top_ms = max(max(s.used_ms or 0 for s in shots), max(s.limit_ms or 0 for s in shots))
    bins = min(MAX_BINS, max(1, math.ceil((top_ms + 1) / BIN_MS)))
    counts = [[0] * bins for _ in range(2)]
    for s in shots:
        counts[s.player][min(bins - 1, (s.used_ms or 0) // BIN_MS)] += 1
    left, right, top, bottom = 56, 20, 40, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    most = max(max(row) for row in counts)
    step = max(1, math.ceil(most / 5))
    y_max = step * math.ceil(most * 1.15 / step)  # room for the top bar's count
    bin_w = plot_w / bins
    bar_w = bin_w * 0.38
    body: list[str] = []
    for k in range(0, y_max + 1, step):  # horizontal grid and the count axis
        y = top + plot_h - plot_h * k / y_max
        body.append(f'<line x1="{left}" y1="{_num(y)}" x2="{width - right}" y2="{_num(y)}" '
                    f'stroke="{GRID}" stroke-width="1"/>')
        body.append(_text(left - 8, y + 5, str(k), anchor="end", size=13))
    for b in range(bins + 1):
        x = left + b * bin_w
        label = str(b * BIN_MS // 1000) if b < bins or bins < MAX_BINS else ""
        body.append(_text(x, top + plot_h + 20, label, anchor="middle", size=13))
    if bins == MAX_BINS:
        body.append(_text(left + plot_w - bin_w / 2, top + plot_h + 20,
                          f"{(bins - 1) * BIN_MS // 1000}+", anchor="middle", size=13))
    for seconds, cls in ((20, "mark-20"), (30, "mark-30")):  # the shares' thresholds
        if seconds * 1000 < bins * BIN_MS:
            x = left + plot_w * seconds * 1000 / (bins * BIN_MS)
            body.append(f'<line class="{cls}" x1="{_num(x)}" y1="{top - 6}" x2="{_num(x)}" '
                        f'y2="{top + plot_h}" stroke="{LIMIT_COLOUR}" stroke-width="1.5" '
                        'stroke-dasharray="6 4"/>')
            body.append(_text(x + 4, top + 8, f"{seconds} {_t(lang, 'sec')}", size=12))
    for player in (0, 1):
        for b, count in enumerate(counts[player]):
            if not count:
                continue
            h = plot_h * count / y_max
            x = left + b * bin_w + bin_w * 0.1 + player * bar_w * 1.05
            y = top + plot_h - h
            body.append(
                f'<rect class="bar" data-player="{player}" data-bin="{b}" '
                f'data-count="{count}" x="{_num(x)}" y="{_num(y)}" width="{_num(bar_w)}" '
                f'height="{_num(h)}" fill="{PLAYER_COLOURS[player]}"/>')
            body.append(_text(x + bar_w / 2, y - 4, str(count), anchor="middle", size=12))
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" '
                f'y2="{top + plot_h}" stroke="#222222" stroke-width="1.5"/>')
    body.append(_text(width - right, height - 8, _t(lang, "time_s"), anchor="end", size=13))
    means = []
    for player in (0, 1):
        own = [s.used_ms or 0 for s in shots if s.player == player]
        means.append(f" ({_t(lang, 'mean')} {_dec(sum(own) / len(own) / 1000, lang)} "
                     f"{_t(lang, 'sec')})"
                     if own else "")
    body += _legend(left, 22, record, notes=means, width=width)
    return _svg(width, height, title, body, "distribution")


# -- time used per shot through the frame ---------------------------------------------------------

def _timed(frames: Sequence[FrameRecord]) -> list[Shot]:
    return [s for f in frames for s in f.shots if s.used_ms is not None and s.outcome]


def shots_svg(record: MatchRecord, *, frame: int | None = None, lang: str = "en",
              width: int = 1000, height: int = 380) -> str:
    title = _t(lang, "time_s")
    if not record.timer:
        return _empty("shots", title, _t(lang, "no_timer"))
    frames = _frames(record, frame)
    shots = _timed(frames)
    if not shots:
        return _empty("shots", title, _t(lang, "no_shots"))
    left, right, top, bottom = 56, 20, 44, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    top_ms = max(max((s.used_ms or 0) for s in shots),
                 max((s.limit_ms or 0) + s.extension_ms for s in shots))
    y_max = 5000 * math.ceil(top_ms / 5000 + 0.2)
    n = len(shots)
    slot = plot_w / n

    def y_of(ms: float) -> float:
        return top + plot_h - plot_h * ms / y_max

    body: list[str] = []
    for ms in range(0, y_max + 1, 5000):
        y = y_of(ms)
        body.append(f'<line x1="{left}" y1="{_num(y)}" x2="{width - right}" y2="{_num(y)}" '
                    f'stroke="{GRID}" stroke-width="1"/>')
        body.append(_text(left - 8, y + 5, str(ms // 1000), anchor="end", size=13))
    # Frame boundaries (a match's chart).
    for i in range(1, n):
        if shots[i].frame != shots[i - 1].frame:
            x = left + i * slot
            body.append(f'<line class="frame-sep" x1="{_num(x)}" y1="{top - 8}" '
                        f'x2="{_num(x)}" y2="{top + plot_h}" stroke="#888888" '
                        'stroke-width="1.5"/>')
    for i, s in enumerate(shots):
        if i == 0 or s.frame != shots[i - 1].frame:
            body.append(_text(left + i * slot + 4, top - 12,
                              f"{_t(lang, 'frame')} {s.frame}", size=12, colour="#555555"))
    # Extra allowance of extended shots, under the points.
    for i, s in enumerate(shots):
        if s.extension and s.limit_ms is not None:
            x = left + i * slot + slot * 0.15
            y_hi, y_lo = y_of(s.limit_ms + s.extension_ms), y_of(s.limit_ms)
            body.append(f'<rect class="extension" data-shot="{i}" x="{_num(x)}" '
                        f'y="{_num(y_hi)}" width="{_num(slot * 0.7)}" '
                        f'height="{_num(y_lo - y_hi)}" fill="{EXTENSION_COLOUR}" '
                        'fill-opacity="0.25" stroke="#2e9b4f" stroke-width="1"/>')
    # The limit: a step per shot (35 -> 20 s by round, 12.2-12.3).
    points: list[str] = []
    for i, s in enumerate(shots):
        if s.limit_ms is None:
            continue
        y = y_of(s.limit_ms)
        points.append(f"{'M' if not points else 'L'}{_num(left + i * slot)},{_num(y)}")
        points.append(f"L{_num(left + (i + 1) * slot)},{_num(y)}")
    if points:
        body.append(f'<path class="limit" d="{" ".join(points)}" fill="none" '
                    f'stroke="{LIMIT_COLOUR}" stroke-width="2"/>')
    radius = max(2.5, min(7.0, slot * 0.32))
    for i, s in enumerate(shots):
        cx, cy = left + (i + 0.5) * slot, y_of(s.used_ms or 0)
        colour = PLAYER_COLOURS[s.player]
        attrs = (f'data-player="{s.player}" data-frame="{s.frame}" data-used="{s.used_ms}" '
                 f'data-outcome="{s.outcome}"')
        if s.outcome == "time_foul":
            r = radius + 1
            body.append(f'<path class="time-foul" {attrs} d="M{_num(cx - r)},{_num(cy - r)} '
                        f'L{_num(cx + r)},{_num(cy + r)} M{_num(cx - r)},{_num(cy + r)} '
                        f'L{_num(cx + r)},{_num(cy - r)}" stroke="{FOUL_COLOUR}" '
                        'stroke-width="3" fill="none"/>')
        elif s.played:
            body.append(f'<circle class="point" {attrs} cx="{_num(cx)}" cy="{_num(cy)}" '
                        f'r="{_num(radius)}" fill="{colour}"/>')
        else:
            body.append(f'<circle class="stop" {attrs} cx="{_num(cx)}" cy="{_num(cy)}" '
                        f'r="{_num(radius)}" fill="#ffffff" stroke="{colour}" '
                        'stroke-width="2"/>')
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" '
                f'y2="{top + plot_h}" stroke="#222222" stroke-width="1.5"/>')
    body.append(_text(left - 8, top - 26 + 8, _t(lang, "sec"), anchor="end", size=13))
    body.append(_text(width - right, height - 12, _t(lang, "shots") + " →", anchor="end",
                      size=13))
    body += _legend(left + 150, 20, record, extra=(
        (LIMIT_COLOUR, _t(lang, "limit")), (EXTENSION_COLOUR, _t(lang, "extension")),
        (FOUL_COLOUR, _t(lang, "time_foul"))), width=width)
    return _svg(width, height, title, body, "shots")


# -- timeline of who was at the table ----------------------------------------------------------

def _frame_end(frame: FrameRecord) -> int:
    if frame.ended_at is not None:
        return frame.ended_at
    times = [frame.started_at, *(v.started_at for v in frame.visits),
             *(s.ended_at or s.started_at for s in frame.shots),
             *(f.at for f in frame.fouls), *(e.at for e in frame.extensions)]
    return max(times)


def timeline_svg(record: MatchRecord, *, frame: int | None = None, lang: str = "en",
                 width: int = 1000, height: int | None = None) -> str:
    """``height``: at most this tall (the rows shrink to fit); None: 34 px rows."""
    frames = _frames(record, frame)
    title = f"{_t(lang, 'frame')}: {record.players[0]} / {record.players[1]}"
    if not frames:
        return _empty("timeline", title, "—")
    left, right, top, row_h, gap = 110, 20, 40, 34, 16
    if height is not None:  # rows of 12..34 px to fit the height asked for
        row_h = max(12, min(34, (height - top - 30) // max(1, len(frames)) - gap))
    height = top + len(frames) * (row_h + gap) + 30
    plot_w = width - left - right
    longest = max(max(1, _frame_end(f) - f.started_at) for f in frames)
    tick = next((t for t in TICKS_MS if longest / t <= 10), TICKS_MS[-1])

    def x_of(frame_: FrameRecord, at: int) -> float:
        return left + plot_w * max(0, at - frame_.started_at) / longest

    body: list[str] = []
    for k in range(0, longest + 1, tick):
        x = left + plot_w * k / longest
        body.append(f'<line x1="{_num(x)}" y1="{top - 4}" x2="{_num(x)}" '
                    f'y2="{height - 26}" stroke="{GRID}" stroke-width="1"/>')
        label = (f"{k // 60_000} {_t(lang, 'min')}" if tick >= 60_000 else
                 f"{k // 1000} {_t(lang, 'sec')}")
        body.append(_text(x, height - 8, label, anchor="middle", size=12))
    for row, f in enumerate(frames):
        y = top + row * (row_h + gap)
        end = _frame_end(f)
        label = f"{_t(lang, 'frame')} {f.number}"
        body.append(_text(left - 10, y + row_h / 2 + 5, label, anchor="end", size=14,
                          weight="bold"))
        for v in f.visits:
            x1 = x_of(f, v.started_at)
            x2 = x_of(f, v.ended_at if v.ended_at is not None else end)
            body.append(f'<rect class="visit" data-player="{v.player}" data-visit="{v.number}" '
                        f'x="{_num(x1)}" y="{_num(y)}" width="{_num(max(1.5, x2 - x1))}" '
                        f'height="{row_h}" fill="{PLAYER_COLOURS[v.player]}" '
                        'stroke="#ffffff" stroke-width="1"/>')
        for started, resumed in f.pauses:
            x1 = x_of(f, started)
            x2 = x_of(f, resumed if resumed is not None else end)
            body.append(f'<rect class="pause" x="{_num(x1)}" y="{_num(y + row_h * 0.3)}" '
                        f'width="{_num(max(1.5, x2 - x1))}" height="{_num(row_h * 0.4)}" '
                        'fill="#ffffff" fill-opacity="0.7"/>')
        for foul in f.fouls:
            x = x_of(f, foul.at)
            body.append(f'<path class="foul-mark" data-player="{foul.player}" '
                        f'data-rule="{markup(foul.rule)}" d="M{_num(x)},{_num(y + row_h + 1)} '
                        f'l-6,10 l12,0 z" fill="{FOUL_COLOUR}"/>')
        for ext in f.extensions:
            x = x_of(f, ext.at)
            body.append(f'<path class="ext-mark" data-player="{ext.player}" '
                        f'd="M{_num(x)},{_num(y - 12)} l6,6 l-6,6 l-6,-6 z" '
                        f'fill="{EXTENSION_COLOUR}"/>')
    body += _legend(left, 22, record, extra=((FOUL_COLOUR, _t(lang, "foul")),
                                             (EXTENSION_COLOUR, _t(lang, "extension"))),
                    width=width)
    return _svg(width, height, title, body, "timeline")


Chart = Callable[..., str]
CHARTS: dict[str, Chart] = {
    "distribution": distribution_svg,
    "shots": shots_svg,
    "timeline": timeline_svg,
}


def chart_svg(chart: Chart, record: MatchRecord, *, frame: int | None = None,
              lang: str = "en", width: int | None = None, height: int | None = None) -> str:
    """``width``/``height`` in px (a page asks for its box's size, so text stays at its
    size on screen); None: the print sizes."""
    size: dict[str, int] = {}
    if width is not None:
        size["width"] = width
    if height is not None:
        size["height"] = height
    return chart(record, frame=frame, lang=lang, **size)
