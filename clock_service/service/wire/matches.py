"""Matches as records (GET /api/matches, /api/matches/{id}; clock_service/edges/reports/).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
)

from clock_service.core.rules import (
    EndReason,
)
from clock_service.service.wire.state import ClosedModel, Player, PlayerPair

__all__ = ["FrameOut", "MatchExtensionOut", "MatchFoulOut", "MatchPage", "MatchRecordOut",
           "MatchSummary", "PlayerStatsOut", "RecordSignature", "ShotOut", "VisitOut"]


MatchStatus = Literal["playing", "over", "closed"]


class MatchSummary(ClosedModel):
    id: str = Field(description="'<table>.<number>'", examples=["1.2"])
    table: str
    number: int = Field(description="1 for the table's first match; new_match counts on")
    status: MatchStatus = Field(description="playing; over (won: race_to reached); closed "
                                "(the table moved on to its next match before a winner)")
    players: list[str]
    timer: bool
    race_to: int | None
    score: PlayerPair = Field(description="frames won")
    frames: int = Field(description="frames started")
    winner: Player | None
    started_at: int = Field(description="unix ms")
    ended_at: int | None = Field(description="unix ms: match.ended, or the next match's start")
    event: str | None
    referee: str | None
    first_breaker: Player | None
    start_seq: int = Field(description="the match's first event in its table's log")
    end_seq: int | None = Field(description="its last event once the next match began")
    closed_reason: str | None = Field(description="closed: why it was left unfinished")


class MatchPage(ClosedModel):
    matches: list[MatchSummary] = Field(description="newest first")
    next: str | None = Field(description="pass as after= for the next page; null: the last")


class PlayerStatsOut(ClosedModel):
    """One player's figures over a frame or the match (definitions: README "Matches")."""

    shots: int = Field(description="shots played (clock stopped by shot, or a result)")
    timed_shots: int
    mean_ms: int | None
    median_ms: int | None
    p90_ms: int | None = Field(description="nearest rank")
    max_ms: int | None
    total_ms: int | None
    over_20s: int | None = Field(description="shots with used_ms > 20000")
    over_30s: int | None
    share_over_20s: float | None
    share_over_30s: float | None
    extensions: int
    time_fouls: int
    fouls: int = Field(description="every foul, time fouls included (I12)")
    fouls_by_rule: dict[str, int]
    whites: int = Field(description="whites credited")
    visits: int
    frames_won: int
    breaks: int = Field(description="frames broken")
    breaks_won: int = Field(description="frames broken and won")


class ShotOut(ClosedModel):
    frame: int
    visit: int
    round: int
    number: int = Field(description="1.. within the frame")
    player: Player
    limit_ms: int | None
    used_ms: int | None = Field(description="start's remaining + extensions granted while "
                                "counting - remaining at the stop (0 at expiry); pauses "
                                "excluded; null without a timer")
    extension: bool
    extension_ms: int
    outcome: Literal["shot", "time_foul", "turn", "foul", "new_frame"] | None = Field(
        description="shot: played in time; time_foul: expired; turn/foul/new_frame: the clock "
        "stopped without a shot; null: still counting")
    fouls: list[str] = Field(description="rules of the fouls this shot caused")
    whites: int | None = Field(description="credited by it (its result); null: not reported")
    colour_potted: bool | None
    pauses: int
    corrected: bool = Field(description="a set_time correction happened during it")
    by: str | None = Field(description="who decided it (referee, camera), when recorded")
    started_at: int
    ended_at: int | None
    start_seq: int
    end_seq: int | None


class MatchFoulOut(ClosedModel):
    frame: int
    visit: int
    player: Player
    rule: str
    reason: str
    time_foul: bool
    technical_loss: bool
    at: int
    seq: int
    code: str | None = Field(None, description="structured foul code (D10), when recorded")
    note: str | None = Field(None, description="the referee's words with a coded foul")


class MatchExtensionOut(ClosedModel):
    frame: int
    visit: int
    player: Player
    extension_ms: int
    at: int
    seq: int


class VisitOut(ClosedModel):
    number: int
    round: int
    player: Player
    started_at: int
    ended_at: int | None
    reason: str | None = Field(description="how it began: break, turn, result, foul, "
                               "time_foul, hand_back")


class FrameOut(ClosedModel):
    number: int
    breaker: Player
    winner: Player | None
    reason: EndReason | None = Field(description="null: still in play")
    started_at: int
    ended_at: int | None
    duration_ms: int | None = Field(description="wall clock, pauses included")
    whites: PlayerPair
    visits: int
    fouls: list[MatchFoulOut]
    extensions: list[MatchExtensionOut]
    players: list[PlayerStatsOut] = Field(min_length=2, max_length=2)
    shots: list[ShotOut] | None = Field(None, description="absent with shots=false")
    visit_log: list[VisitOut] | None = Field(None, description="absent with shots=false")
    pauses: list[list[int | None]] | None = Field(
        None, description="[paused at, resumed at]; absent with shots=false")


class RecordSignature(ClosedModel):
    status: Literal["verified", "unverified", "unsigned"] = Field(
        description="verified: the table's Ed25519 signature is valid and the events in this "
        "store are the ones signed; unverified: anything else (reason says what)")
    fingerprint: str | None = Field(description="the signing key's fingerprint")
    first: int | None = Field(description="the signed range's first event")
    last: int | None = Field(description="the signed range's last event (match.ended)")
    reason: str | None = Field(description="why it is not verified")


class MatchRecordOut(ClosedModel):
    id: str
    table: str
    number: int
    status: MatchStatus
    players: list[str]
    timer: bool
    race_to: int | None
    profile: dict[str, Any] | None
    first_breaker: Player
    event: str | None
    referee: str | None
    started_at: int
    ended_at: int | None
    over: bool
    winner: Player | None
    score: PlayerPair
    start_seq: int
    last_seq: int
    log_sha256: str | None = Field(description="SHA-256 of the match's events as the "
                                   "statistics read them (README \"Matches\"); the protocol "
                                   "prints it")
    closed_reason: str | None = Field(description="closed: why it was left unfinished")
    signature: RecordSignature | None = Field(
        None, description="the verdict on the table's signature of this record (issue 20)")
    players_stats: list[PlayerStatsOut] = Field(min_length=2, max_length=2)
    frames: list[FrameOut]
    clips: str | None = Field(
        None, description="where the camera's video clips of this match are listed "
        "(/api/matches/<id>/clips); present only on a service with a camera at this "
        "match's table and clips on (issue 21 point 5)")
