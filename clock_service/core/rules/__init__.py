"""Pure rules core of the frame: the strict call, the frame rules and the match. No I/O.

- :mod:`.call` -- the strict call and the actual route as data; ``judge_call``
  (7.3-7.5) and ``qualifies_as_early_pot`` (8.x, I10).
- :mod:`.frame` -- ``FrameRules``: credits, fouls, the 10.4 choice, the end of
  the frame; a ``ShotResult`` in, an ``Outcome`` out.
- :mod:`.fouls` -- ``FoulCode`` for every kind of foul and the rule it breaks;
  ``GeneralFoul``, the referee's structured report of a general foul (9, D10).
- :mod:`.match` -- ``Match``: frames to a race, alternating breaks (I3).
- :mod:`.errors` -- ``RulesError``, ``InvalidResult``, ``RuleRefusal``.
"""

from clock_service.core.rules.call import (
    BALLS,
    JAWS,
    Call,
    CallVerdict,
    Contact,
    CueBall,
    Cushion,
    EarlyPotCheck,
    Pocket,
    Route,
    ShotType,
    judge_call,
    qualifies_as_early_pot,
)
from clock_service.core.rules.errors import InvalidResult, RuleRefusal, RulesError
from clock_service.core.rules.fouls import (
    FOUL_RULES,
    GENERAL_FOULS,
    Breach,
    FoulCode,
    GeneralFoul,
    OffTableBall,
    TouchedWith,
)
from clock_service.core.rules.frame import (
    COMMANDS,
    WHITE_LIMIT,
    WHITES,
    CallTiming,
    EndReason,
    Foul,
    FrameRules,
    Outcome,
    Phase,
    Respot,
    RespotBall,
    RespotSpot,
    ShotResult,
    Turn,
)
from clock_service.core.rules.match import Match

__all__ = [
    "FOUL_RULES",
    "GENERAL_FOULS",
    "Breach",
    "FoulCode",
    "GeneralFoul",
    "OffTableBall",
    "TouchedWith",
    "BALLS",
    "COMMANDS",
    "JAWS",
    "WHITES",
    "WHITE_LIMIT",
    "Call",
    "CallTiming",
    "CallVerdict",
    "Contact",
    "CueBall",
    "Cushion",
    "EarlyPotCheck",
    "EndReason",
    "Foul",
    "FrameRules",
    "InvalidResult",
    "Match",
    "Outcome",
    "Phase",
    "Pocket",
    "Respot",
    "RespotBall",
    "RespotSpot",
    "Route",
    "RuleRefusal",
    "RulesError",
    "ShotResult",
    "ShotType",
    "Turn",
    "judge_call",
    "qualifies_as_early_pot",
]
