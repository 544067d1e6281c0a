"""HTTP routes of the match records: listing, record, CSV, charts, the protocol page.

Reading a match never needs the referee token, so nothing here may cost the clock: a
listing runs in a worker thread (SQLite makes its JSON), every record and everything drawn
from it is made in the reports worker process (``Reports.output``) and sent as the text it
made, and lists are paginated (``MAX_PAGE``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from clock_service.core.errors import UnknownMatch
from clock_service.core.text import markup
from clock_service.edges.reports.protocol import LANGS
from clock_service.edges.reports.service import Reports
from clock_service.service.storage.index import MAX_PAGE
from clock_service.service.wire.fields import MAX_SEQ, LogId, MatchId
from clock_service.service.wire.http import ErrorResponse
from clock_service.service.wire.matches import MatchPage, MatchRecordOut

__all__ = ["routers", "clips_link"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (404, 422)}


def clips_link(clips_table: str | None, match_id: str) -> str | None:
    """``/api/matches/<id>/clips`` when this service's camera keeps clips and watches the
    match's table (``clips_table``), else None."""
    if clips_table is None:
        return None
    table, dot, number = match_id.rpartition(".")
    if not dot or table != clips_table or not number.isdigit():
        return None
    return f"/api/matches/{match_id}/clips"


_CLIPS_LINK = {"en": "Video clips", "ru": "Видео камеры"}


_NO_MATCH = {
    "en": ("No such match", "There is no match “{id}” on this service. A match id is "
           "the table and the match's number, e.g. 1.2; the hall links each table's protocol.",
           "Go to the hall"),
    "ru": ("Такого матча нет", "Матча «{id}» на этом сервисе нет. Номер матча — это стол и "
           "номер матча, например 1.2; протокол каждого стола открывается из зала.",
           "В зал"),
}


def _no_such_match(match: str, lang: str) -> HTMLResponse:
    title, text, back = _NO_MATCH.get(lang, _NO_MATCH["en"])
    body = markup(text.format(id=match or "–"))
    page = (f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{markup(title)}</title><link rel="icon" href="data:,">'
            '<link rel="stylesheet" href="/static/common.css"></head>'
            '<body class="no-match" style="padding:24px;max-width:40em;margin:auto">'
            f'<h1>{markup(title)}</h1><p>{body}</p>'
            f'<p><a href="/">{markup(back)}</a></p></body></html>')
    return HTMLResponse(page, status_code=404, headers={"Cache-Control": "no-cache"})


def _preferred(request: Request) -> str:
    accept = request.headers.get("accept-language", "").lower()
    return "ru" if accept.startswith("ru") else "en"


def routers(reports: Reports, clips_table: Callable[[], str | None] = lambda: None
            ) -> list[APIRouter]:
    """The matches' routes and the protocol page over ``reports``; ``clips_table``: the
    table whose shots this service's camera keeps as clips, when it does."""
    matches_router = APIRouter()
    report_router = APIRouter()

    @matches_router.get("/api/matches", tags=["matches"], response_model=None,
                        responses={200: {"model": MatchPage}, **_ERRORS})
    async def list_matches(
        request: Request,
        table: Annotated[LogId | None, Query(description="only this table's matches (a "
                                            "live table's id or an archive's)")] = None,
        since: int | None = Query(None, ge=0, le=MAX_SEQ, description="only matches "
                                  "started at or after this unix ms"),
        after: Annotated[MatchId | None, Query(description="the 'next' of the previous "
                                               "page")] = None,
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> Response:
        """Matches, newest first, from the match index (archived tables' too)."""
        text = await reports.list(table=table, since=since, after=after,
                                              limit=limit)
        return Response(text, media_type="application/json")

    @matches_router.get("/api/matches/{match_id}", tags=["matches"], response_model=None,
                        responses={200: {"model": MatchRecordOut}, **_ERRORS})
    async def get_match(
        match_id: MatchId, request: Request,
        shots: bool = Query(True, description="false: leave out the per-shot lists"),
    ) -> Response:
        """The match's record: frames, fouls, extensions, shots and per-player statistics
        of each frame and of the match, built from the event log."""
        text = await reports.output(match_id, "json", shots=shots)
        link = clips_link(clips_table(), match_id)
        if link is not None and text.rstrip().endswith("}"):
            # the record links its video evidence (issue 21 point 5): spliced in here, the
            # record itself (and its signature) is the worker's
            text = text.rstrip()[:-1] + f', "clips": "{link}"}}'
        return Response(text, media_type="application/json")

    @matches_router.get("/api/matches/{match_id}/shots.csv", tags=["matches"],
                        responses={200: {"content": {"text/csv": {}}}, **_ERRORS})
    async def get_match_csv(
        match_id: MatchId, request: Request,
        locale: Literal["en", "ru"] = Query("en", description="ru: a byte-order mark and ';' "
                                            "between fields, as Russian Excel reads a CSV"),
    ) -> Response:
        """One row per shot: match, frame, visit, round, player, limit_ms, used_ms,
        extension, outcome, fouls (then shot, player_index, extension_ms, whites, ...)."""
        text = await reports.output(match_id, "csv", locale=locale)
        name = match_id.replace(".", "-")
        return Response(text, media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="match-{name}.csv"'})

    @matches_router.get("/api/matches/{match_id}/charts/{chart}.svg", tags=["matches"],
                        responses={200: {"content": {"image/svg+xml": {}}}, **_ERRORS})
    async def get_match_chart(
        match_id: MatchId, chart: Literal["distribution", "shots", "timeline"],
        request: Request,
        frame: int | None = Query(None, ge=1, le=MAX_SEQ, description="one frame "
                                  "(default: the match)"),
        lang: Literal["ru", "en"] = Query("en"),
        width: int | None = Query(None, ge=400, le=2400, description="px (default: print)"),
        height: int | None = Query(None, ge=200, le=1400, description="px (default: print)"),
    ) -> Response:
        """A picture of the match, drawn on the server (no script, nothing from outside):
        shot-time distribution per player, time used per shot with the limit line, or
        the timeline of who was at the table."""
        svg = await reports.output(match_id, "svg", chart=chart, frame=frame,
                                               lang=lang, width=width, height=height)
        return Response(svg, media_type="image/svg+xml",
                        headers={"Cache-Control": "no-cache"})

    @report_router.get("/report", include_in_schema=False)
    async def report_page(request: Request, match: str | None = None,
                          lang: str | None = None) -> HTMLResponse:
        """The match protocol: the official record, printable on one or two A4 pages. A
        wrong or missing match id is a page that says so (404), not an API error's JSON."""
        language = lang if lang in LANGS else _preferred(request)
        if not match:
            return _no_such_match("", language)
        try:
            html = await reports.output(match, "html", lang=language)
        except UnknownMatch:
            return _no_such_match(match, language)
        if clips_link(clips_table(), match) is not None and '<nav class="links">' in html:
            # the camera's clips of the match: a link to the viewer among the page's links
            # (issue 21 point 5; not printed, as they are not); the protocol is the worker's
            text = _CLIPS_LINK.get(language, _CLIPS_LINK["en"])
            href = markup(f"/clips?match={match}&lang={language}")
            start = html.index('<nav class="links">')
            end = html.index("</nav>", start)
            html = (html[:end] + f'<a class="clips-link" href="{href}">{markup(text)}</a>'
                    + html[end:])
        return HTMLResponse(html, headers={"Cache-Control": "no-cache"})

    return [matches_router, report_router]
