"""The match protocol as one HTML document, in Russian or English. Pure: record in, text out.

The official record of the match: header (event, table, date, referee), players and the
result, frame by frame with the reason (coloured ball 3.2, technical loss 10.5-10.6, the
referee), the fouls with their rule numbers, time fouls, extensions, the per-player
statistics, the pictures (inline SVG, charts.py) and signature lines for the referee and
both players. ``report.css`` lays it out for the screen and for A4 (one or two pages).

No script at all (the page works under ``script-src 'self'`` and prints from a file).
Every name from the log is escaped. Cells carry ``data-*`` attributes naming the figure,
so a test can read every number the protocol shows.
"""

from __future__ import annotations

import time as _time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from clock_service.core.text import markup
from clock_service.edges.reports.charts import Chart, distribution_svg, shots_svg, timeline_svg
from clock_service.edges.reports.stats import FoulRecord, MatchRecord, PlayerStats

__all__ = ["render_protocol", "LANGS", "TEXTS", "seconds"]

LANGS = ("ru", "en")

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Match protocol", "event": "Event", "table": "Table", "date": "Date",
        "referee": "Referee", "match": "Match", "race_to": "Race to", "open": "open-ended",
        "timer": "Time control", "no_timer": "no timer (12.1)",
        "profile": "{shot} s per shot for {rounds} rounds, then {step} s less per round "
                   "down to {floor} s; extension {ext} s, {per} per player per frame",
        "players": "Players", "result": "Result", "winner": "Winner",
        "status.playing": "in play", "status.over": "finished",
        "status.closed": "not finished (the table started its next match)",
        "frames": "Frames", "frame": "Frame", "breaker": "Break", "reason": "Result by",
        "duration": "Duration", "whites": "Whites", "fouls": "Fouls",
        "time_fouls": "Time fouls", "extensions": "Extensions", "visits": "Visits",
        "reason.legal_colour_pot": "coloured ball (3.2)",
        "reason.technical_loss": "technical loss (10.5)",
        "reason.referee": "referee's decision", "reason.none": "in play",
        "nobody": "nobody",
        "statistics": "Statistics", "shots": "Shots", "mean": "Mean, s",
        "median": "Median, s", "p90": "90th pct, s", "max": "Longest, s",
        "over20": "Over 20 s", "over30": "Over 30 s", "breaks_won": "Breaks won",
        "foul_list": "Fouls", "rule": "Rule", "player": "Player", "visit": "Visit",
        "what": "Reason", "time_foul": "time foul", "technical_loss": "technical loss",
        "ext_list": "Extensions", "at": "Time", "none": "none",
        "charts": "Shot times", "chart.distribution": "Shot-time distribution",
        "chart.shots": "Time used per shot, with the limit and the extensions",
        "chart.timeline": "Who was at the table",
        "signatures": "Signatures", "sign.referee": "Referee", "sign.player": "Player",
        "generated": "Built from the event log of table {table}, events {first}-{last}; "
                     "log digest (SHA-256) {digest}",
        "signed": "Signed by table {table}'s key, fingerprint {fingerprint} (events "
                  "{first}-{last}): verified.",
        "unverified": "UNVERIFIED record: {reason}. Fingerprint of the key: {fingerprint}.",
        "unsigned": "Not signed: {reason}.",
        "code.ball_off_table": "ball off the table", "code.double_hit": "double hit",
        "code.push_shot": "push shot", "code.no_ball_contact": "the cue ball touched no ball",
        "code.touched_ball": "a ball touched", "code.out_of_turn": "played out of turn",
        "code.illegal_break": "illegal break", "code.over_limit": "over the whites limit",
        "code.colour_without_call": "coloured ball without a call",
        "code.white_and_colour": "a white and the coloured ball with one shot",
        "code.call_not_fulfilled": "call not fulfilled",
        "code.unannounced_contact": "unannounced contact",
        "code.colour_before_three": "coloured ball before three whites",
        "code.shot_time": "time foul",
        "print": "Print", "csv": "CSV", "json": "JSON", "lang": "Русский",
        "time_note": "Time used per shot: from start to shot by the clock, pauses "
                     "excluded; shares count shots over 20 s and over 30 s.",
    },
    "ru": {
        "title": "Протокол матча", "event": "Соревнование", "table": "Стол", "date": "Дата",
        "referee": "Судья", "match": "Матч", "race_to": "До побед", "open": "без лимита",
        "timer": "Контроль времени", "no_timer": "без таймера (12.1)",
        "profile": "{shot} с на удар в первых {rounds} кругах, затем на {step} с меньше "
                   "за круг до {floor} с; продление {ext} с, {per} на игрока в партии",
        "players": "Игроки", "result": "Счёт", "winner": "Победитель",
        "status.playing": "идёт", "status.over": "завершён",
        "status.closed": "не завершён (на столе начат следующий матч)",
        "frames": "Партии", "frame": "Партия", "breaker": "Разбой", "reason": "Исход",
        "duration": "Длительность", "whites": "Белые", "fouls": "Фолы",
        "time_fouls": "Фолы по времени", "extensions": "Продления", "visits": "Подходы",
        "reason.legal_colour_pot": "забит цветной (3.2)",
        "reason.technical_loss": "техническое поражение (10.5)",
        "reason.referee": "решение судьи", "reason.none": "идёт",
        "nobody": "никто",
        "statistics": "Статистика", "shots": "Удары", "mean": "Среднее, с",
        "median": "Медиана, с", "p90": "90-й процентиль, с", "max": "Самый долгий, с",
        "over20": "Дольше 20 с", "over30": "Дольше 30 с", "breaks_won": "Выигрыши на разбое",
        "foul_list": "Фолы", "rule": "Правило", "player": "Игрок", "visit": "Подход",
        "what": "Причина", "time_foul": "фол по времени",
        "technical_loss": "техническое поражение",
        "ext_list": "Продления", "at": "Время", "none": "нет",
        "charts": "Время ударов", "chart.distribution": "Распределение времени ударов",
        "chart.shots": "Время на каждый удар, лимит и продления",
        "chart.timeline": "Кто был у стола",
        "signatures": "Подписи", "sign.referee": "Судья", "sign.player": "Игрок",
        "generated": "Составлен по журналу событий стола {table}, события {first}-{last}; "
                     "контрольная сумма журнала (SHA-256) {digest}",
        "signed": "Подписан ключом стола {table}, отпечаток {fingerprint} (события "
                  "{first}-{last}): подпись верна.",
        "unverified": "ПОДПИСЬ НЕ ПОДТВЕРЖДЕНА: {reason}. Отпечаток ключа: {fingerprint}.",
        "unsigned": "Не подписан: {reason}.",
        "code.ball_off_table": "шар за бортом", "code.double_hit": "двойное касание",
        "code.push_shot": "толчок", "code.no_ball_contact": "биток не коснулся шара",
        "code.touched_ball": "касание шара", "code.out_of_turn": "удар не в очередь",
        "code.illegal_break": "неправильный разбой", "code.over_limit": "сверх лимита белых",
        "code.colour_without_call": "цветной без заказа",
        "code.white_and_colour": "белый и цветной одним ударом",
        "code.call_not_fulfilled": "заказ не выполнен",
        "code.unannounced_contact": "незаказанное касание",
        "code.colour_before_three": "цветной до трёх белых",
        "code.shot_time": "фол по времени",
        "print": "Печать", "csv": "CSV", "json": "JSON", "lang": "English",
        "time_note": "Время удара: от «старт» до «удар» по часам, без пауз; доли — удары "
                     "дольше 20 с и дольше 30 с.",
    },
}


def seconds(ms: int | None) -> str:
    """12345 -> '12.3' (tenths, half up: the pages' JS rounds the same way); None (no
    timer, no data) -> '—'."""
    if ms is None:
        return "—"
    tenths = (int(ms) + 50) // 100
    return f"{tenths // 10}.{tenths % 10}"


def _plain_s(ms: int | None) -> str:
    """35000 -> '35', 1500 -> '1.5', 250 -> '0.25' (a profile's figure, exactly)."""
    return f"{(ms or 0) / 1000:g}"


def _share(count: int | None, share: float | None) -> str:
    return "—" if count is None or share is None else f"{count} ({share * 100:.0f}%)"


def _foul_text(t: Mapping[str, str], foul: FoulRecord) -> str:
    """The foul in the protocol's language: its code's name (structured fouls, D10) with the
    referee's note; a free-text foul (code ``other``, or none recorded) as written."""
    if foul.time_foul:
        return t["time_foul"]
    name = t.get(f"code.{foul.code}") if foul.code and foul.code != "other" else None
    if name is None:
        return foul.reason
    return f"{name}: {foul.note}" if foul.note else name


def _clock(ms: int | None) -> str:
    return "" if ms is None else _time.strftime("%H:%M:%S", _time.localtime(ms / 1000))


def _duration(ms: int | None) -> str:
    if ms is None:
        return "—"
    total = ms // 1000
    hours, rest = divmod(total, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _cell(value: Any, stat: str = "", player: int | None = None, tag: str = "td") -> str:
    attrs = ""
    if stat:
        attrs += f' data-stat="{stat}"'
    if player is not None:
        attrs += f' data-player="{player}"'
    return f"<{tag}{attrs}>{markup(value)}</{tag}>"


def _stats_rows(t: Mapping[str, str], stats: Sequence[PlayerStats], players: Sequence[str],
                timer: bool) -> str:
    rows: list[tuple[str, str, list[str]]] = [
        ("shots", t["shots"], [str(s.shots) for s in stats])]
    if timer:  # 12.1: without a timer, no time figures at all
        rows += [
            ("mean_ms", t["mean"], [seconds(s.mean_ms) for s in stats]),
            ("median_ms", t["median"], [seconds(s.median_ms) for s in stats]),
            ("p90_ms", t["p90"], [seconds(s.p90_ms) for s in stats]),
            ("max_ms", t["max"], [seconds(s.max_ms) for s in stats]),
            ("over_20s", t["over20"], [_share(s.over_20s, s.share_over_20s) for s in stats]),
            ("over_30s", t["over30"], [_share(s.over_30s, s.share_over_30s) for s in stats]),
            ("extensions", t["extensions"], [str(s.extensions) for s in stats]),
            ("time_fouls", t["time_fouls"], [str(s.time_fouls) for s in stats]),
        ]
    rows += [
        ("fouls", t["fouls"], [str(s.fouls) for s in stats]),
        ("whites", t["whites"], [str(s.whites) for s in stats]),
        ("visits", t["visits"], [str(s.visits) for s in stats]),
        ("frames_won", t["frames"], [str(s.frames_won) for s in stats]),
        ("breaks_won", t["breaks_won"], [f"{s.breaks_won} / {s.breaks}" for s in stats]),
    ]
    head = ("<tr><th></th>" + "".join(_cell(p, tag="th") for p in players) + "</tr>")
    body = "".join(
        f"<tr><th>{markup(label)}</th>" + "".join(_cell(v, key, i) for i, v in enumerate(vals))
        + "</tr>" for key, label, vals in rows)
    return (f'<table class="stats" data-table="stats"><thead>{head}</thead>'
            f"<tbody>{body}</tbody></table>")


# The protocol page's own policy, on top of the service's headers: it needs its stylesheet
# (or inline style when printed) and nothing else; the charts are inline SVG.
PRINT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
             "base-uri 'none'; form-action 'none'")
PAGE_CSP = ("default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "base-uri 'none'; form-action 'none'")


def render_protocol(summary: Mapping[str, Any], record: MatchRecord, *, lang: str = "en",
                    stylesheet: str | None = "/static/report.css",
                    inline_css: str | None = None, links: bool = True,
                    digest: str | None = None) -> str:
    """The protocol page. ``inline_css`` (for a file printed without the server) replaces
    the stylesheet link; ``links`` adds the screen-only bar (print, CSV, JSON, language)."""
    t = TEXTS.get(lang, TEXTS["en"])
    names = record.players
    score = record.score
    status = summary.get("status", "over" if record.over else "playing")
    started = summary.get("started_at", record.started_at)
    winner = record.winner
    date = _time.strftime("%Y-%m-%d", _time.localtime(started / 1000))
    times = f"{_clock(started)}–{_clock(summary.get('ended_at'))}"
    profile = record.profile or {}
    if record.timer and profile:
        timing = t["profile"].format(
            shot=_plain_s(profile.get("shot_ms")), rounds=profile.get("full_rounds", 0),
            step=_plain_s(profile.get("step_ms")), floor=_plain_s(profile.get("floor_ms")),
            ext=_plain_s(profile.get("extension_ms")),
            per=profile.get("extensions_per_frame", 0))
    else:
        timing = t["no_timer"] if not record.timer else ""
    mid = markup(record.id)
    parts: list[str] = []
    parts.append(f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
                 f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                 f"<title>{markup(t['title'])} {mid}: {markup(names[0])} – {markup(names[1])}"
                 "</title>")
    if inline_css is not None:
        # Printed from a file by a headless browser (shotclock report --pdf): nothing may
        # be fetched, run or framed, not even a file:// URL a name might smuggle in (issue
        # 20, finding 8: a page printed that way embedded file:///etc/hostname).
        parts.append(f'<meta http-equiv="Content-Security-Policy" content="{PRINT_CSP}">'
                     f"<style>{inline_css}</style>")
    elif stylesheet:
        parts.append(f'<meta http-equiv="Content-Security-Policy" content="{PAGE_CSP}">'
                     f'<link rel="stylesheet" href="{markup(stylesheet)}">')
    parts.append(f'</head><body class="report" data-match="{mid}">')
    if links:
        other = "en" if lang == "ru" else "ru"
        q = quote(record.id)
        parts.append(
            '<nav class="links">'
            f'<a href="/report?match={q}&amp;lang={other}" hreflang="{other}">{t["lang"]}</a>'
            f'<a href="/api/matches/{q}/shots.csv{"?locale=ru" if lang == "ru" else ""}">'
            f'{t["csv"]}</a>'
            f'<a href="/api/matches/{q}">{t["json"]}</a></nav>')
    # -- header -----------------------------------------------------------------------------
    parts.append(f'<header><h1>{markup(t["title"])}</h1><dl class="meta">')
    for key, value, cls in (
        ("event", record.event or "—", "event"),
        ("table", record.table or "—", "table"),
        ("date", f"{date}, {times}", "date"),
        ("referee", record.referee or "—", "referee"),
        ("match", f"{record.id} · {t['race_to']} "
                  f"{record.race_to if record.race_to else t['open']} · "
                  f"{t['status.' + status]}"
                  + (f": {summary['closed_reason']}" if summary.get("closed_reason") else ""),
         "match"),
        ("timer", timing or "—", "timer"),
    ):
        parts.append(f'<div class="{cls}"><dt>{markup(t[key])}</dt><dd data-field="{cls}">'
                     f"{markup(value)}</dd></div>")
    parts.append("</dl></header>")
    # -- players and result ------------------------------------------------------------------
    parts.append('<section class="result"><div class="player p0">'
                 f'<span class="name" data-field="player0">{markup(names[0])}</span></div>'
                 f'<div class="score" data-field="score">{score[0]} : {score[1]}</div>'
                 '<div class="player p1">'
                 f'<span class="name" data-field="player1">{markup(names[1])}</span></div>')
    if winner is not None:
        parts.append(f'<div class="winner">{markup(t["winner"])}: '
                     f'<b data-field="winner">{markup(names[winner])}</b></div>')
    parts.append("</section>")
    # -- frames ------------------------------------------------------------------------------
    parts.append(f'<section class="frames"><h2>{markup(t["frames"])}</h2>'
                 '<table data-table="frames"><thead><tr>'
                 + "".join(f"<th>{markup(t[k])}</th>" for k in (
                     "frame", "breaker", "winner", "reason", "duration", "whites", "fouls",
                     "time_fouls", "extensions"))
                 + "</tr></thead><tbody>")
    for f in record.frames:
        stats = f.stats or ()
        foul_counts = " : ".join(str(s.fouls) for s in stats)
        time_fouls = " : ".join(str(s.time_fouls) for s in stats)
        ext_counts = " : ".join(str(s.extensions) for s in stats)
        reason = t[f"reason.{f.reason}"] if f.reason else t["reason.none"]
        won = (names[f.winner] if f.winner is not None
               else (t["nobody"] if f.reason else "—"))
        parts.append(
            f'<tr data-frame="{f.number}">' + _cell(f.number, "frame")
            + _cell(names[f.breaker], "breaker") + _cell(won, "winner")
            + _cell(reason, "reason") + _cell(_duration(f.duration_ms), "duration")
            + _cell(f"{f.whites[0]} : {f.whites[1]}", "whites") + _cell(foul_counts, "fouls")
            + _cell(time_fouls if record.timer else "—", "time_fouls")
            + _cell(ext_counts if record.timer else "—", "extensions") + "</tr>")
    parts.append("</tbody></table></section>")
    # -- statistics --------------------------------------------------------------------------
    parts.append(f'<section class="statistics"><h2>{markup(t["statistics"])}</h2>')
    parts.append(_stats_rows(t, record.stats or (), names, record.timer))
    if record.timer:
        parts.append(f'<p class="note">{markup(t["time_note"])}</p>')
    parts.append("</section>")
    # -- fouls and extensions ------------------------------------------------------------------
    fouls = [x for f in record.frames for x in f.fouls]
    parts.append(f'<section class="fouls"><h2>{markup(t["foul_list"])}</h2>')
    if fouls:
        parts.append('<table data-table="fouls"><thead><tr>' + "".join(
            f"<th>{markup(t[k])}</th>" for k in ("frame", "visit", "player", "rule", "what",
                                                 "at")) + "</tr></thead><tbody>")
        for x in fouls:
            what = _foul_text(t, x)
            if x.technical_loss:
                what += f" — {t['technical_loss']}"
            parts.append(f'<tr class="{"time-foul" if x.time_foul else "foul"}">'
                         + _cell(x.frame) + _cell(x.visit) + _cell(names[x.player])
                         + _cell(x.rule, "rule") + _cell(what, "what")
                         + _cell(_clock(x.at)) + "</tr>")
        parts.append("</tbody></table>")
    else:
        parts.append(f'<p data-table="fouls">{markup(t["none"])}</p>')
    exts = [x for f in record.frames for x in f.extensions]
    if record.timer:  # one line: they are few (once per player per frame, 12.5)
        parts.append(f'<h2>{markup(t["ext_list"])}</h2>')
        items = [f'<li data-player="{e.player}">{markup(names[e.player])} — '
                 f'{markup(t["frame"].lower())} {e.frame}, {markup(t["visit"].lower())} '
                 f"{e.visit}, {_clock(e.at)}</li>" for e in exts]
        parts.append(f'<ul class="inline" data-table="extensions">{"".join(items)}</ul>'
                     if items else f'<p data-table="extensions">{markup(t["none"])}</p>')
    parts.append("</section>")
    # -- pictures ------------------------------------------------------------------------------
    parts.append(f'<section class="charts"><h2>{markup(t["charts"])}</h2>')
    charts: list[tuple[str, Chart]] = [("timeline", timeline_svg)]
    if record.timer:
        charts = [("distribution", distribution_svg), ("shots", shots_svg), *charts]
    for name, draw in charts:
        parts.append(f'<figure class="chart-{name}"><figcaption>'
                     f'{markup(t["chart." + name])}</figcaption>{draw(record, lang=lang)}'
                     "</figure>")
    parts.append("</section>")
    # -- signatures --------------------------------------------------------------------------
    parts.append(f'<section class="signatures"><h2>{markup(t["signatures"])}</h2>'
                 '<div class="lines">')
    for label, name in ((t["sign.referee"], record.referee or ""),
                        (t["sign.player"], names[0]), (t["sign.player"], names[1])):
        parts.append(f'<div class="sign"><div class="line"></div><div class="who">'
                     f'{markup(label)}{": " if name else ""}{markup(name)}</div></div>')
    parts.append("</div></section>")
    source = t["generated"].format(table=record.table, first=record.start_seq,
                                   last=record.last_seq, digest=digest or record.digest or "—")
    signature = record.signature or {"status": "unsigned", "reason": "—"}
    status = str(signature.get("status") or "unsigned")
    said = t[status if status in ("signed", "unverified", "unsigned") else "unverified"
             if status != "verified" else "signed"].format(
        table=record.table, fingerprint=signature.get("fingerprint") or "—",
        first=signature.get("first"), last=signature.get("last"),
        reason=signature.get("reason") or "—")
    parts.append(f'<footer data-field="source">{markup(source)}'
                 f'<p class="signature signature-{markup(status)}" data-field="signature" '
                 f'data-status="{markup(status)}">{markup(said)}</p></footer></body></html>')
    return "".join(parts)
