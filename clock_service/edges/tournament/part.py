"""The tournament as one part of a table service (issue 25): the draw's queues and the
results out. The composition root (clock_service/edges/cli/main.py) builds it over the runtime and
the app's match records and hands it to ``create_app``, which starts it with the other
parts and gives it to its routes (clock_service/edges/tournament/routes.py). The hall service
has none: those routes then answer 404 ``not_served_here``."""

from __future__ import annotations

from dataclasses import dataclass

from clock_service.edges.tournament.results import Results
from clock_service.edges.tournament.service import Tournament

__all__ = ["TournamentPart"]


@dataclass
class TournamentPart:
    tournament: Tournament
    results: Results

    async def start(self) -> None:
        """The draw first (its queues from the store), then the results' outbox."""
        await self.tournament.start()
        try:
            await self.results.start()
        except BaseException:
            await self.tournament.stop()
            raise

    async def stop(self) -> None:
        try:
            await self.results.stop()
        finally:
            await self.tournament.stop()
