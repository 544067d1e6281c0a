"""The strict call of the coloured ball as data, and the judge of a call (6.3, 7.x, 8.x).

Vocabulary (what a referee UI shows as buttons):

Pockets (:class:`Pocket`), seen from the head of the table (the house end, 1.3, 4.1)::

    top_left ------ top ------- top_right
       |                           |
    left_top                   right_top
       |                           |
    middle_left               middle_right
       |                           |
    left_bottom               right_bottom
       |                           |
    bottom_left ---- bottom ---- bottom_right

Cushions (:class:`Cushion`) are the six cushion segments between pockets:
``top`` is the head short cushion (the house end), ``bottom`` the back (foot)
short cushion where whites are re-spotted (11.2); each long cushion is split by
its middle pocket into ``left_top``/``left_bottom`` and ``right_top``/``right_bottom``.

Balls in contacts (:data:`BALLS`): ``"colour"`` is always the coloured ball;
``"cue"`` is the white cue ball (only when a white was the cue ball, 8.5);
``"white1"`` .. ``"white7"`` are the object whites of this one shot, numbered
in the order they come into play (whites look alike, so the numbers are
labels inside one shot, not ball identities). A contact is written
``"striker>struck"``, e.g. ``"cue>white1"``, ``"white1>colour"``.

A :class:`Call` names the pocket, the ordered cushions of the coloured ball,
the ordered ball-to-ball contacts and the shot type (7.2, I11). A
:class:`Route` is what actually happened, as one ordered ``path`` mixing the
coloured ball's cushion contacts and the ball-to-ball contacts; the order
between the two matters for the early pot (8.2, I10). Judging a call compares
the two sequences separately (7.3), as the call names them separately (7.2).

D3 (the cue ball's first contact is the shot itself). 7.2 asks the call for
ball-to-ball contacts only "for a combination". The cue ball striking its first
object ball (``cue>colour`` for a plain pot, ``cue>white1`` opening a
combination, ``colour>white1`` when the coloured ball is the cue ball, 8.5) is
the shot, not an announced or unannounced contact: the call may name it or
leave it out, and only the contacts after it are the combination judged by 7.3
and 7.4. Likewise the route may leave out the direct contact: a route with no
ball-to-ball contact at all and a white cue ball means the cue ball struck the
coloured ball (``cue>colour`` is implied first), so ``cushions`` +
``early_cushion`` with the direct contact left out is an early pot off a
cushion after the ball contact (8.1-8.2). With the coloured ball as the cue
ball nothing is implied: it must strike a ball before its first cushion (8.2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, NoReturn

from clock_service.core.rules.errors import InvalidResult

__all__ = [
    "BALLS",
    "JAWS",
    "Call",
    "CallVerdict",
    "Contact",
    "CueBall",
    "Cushion",
    "EarlyPotCheck",
    "PathItem",
    "Pocket",
    "Route",
    "ShotType",
    "judge_call",
    "qualifies_as_early_pot",
]


def _unknown(what: str, code: str, value: object, allowed: Iterable[str]) -> NoReturn:
    raise InvalidResult(
        f"unknown {what} {value!r}; allowed: {', '.join(allowed)}", code=code
    )


class Pocket(StrEnum):
    """The six pockets, with stable names."""

    TOP_LEFT = "top_left"
    TOP_RIGHT = "top_right"
    MIDDLE_LEFT = "middle_left"
    MIDDLE_RIGHT = "middle_right"
    BOTTOM_LEFT = "bottom_left"
    BOTTOM_RIGHT = "bottom_right"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("pocket", "unknown_pocket", value, (p.value for p in cls))


class Cushion(StrEnum):
    """The six cushion segments between the pockets (see the module drawing)."""

    TOP = "top"
    BOTTOM = "bottom"
    LEFT_TOP = "left_top"
    LEFT_BOTTOM = "left_bottom"
    RIGHT_TOP = "right_top"
    RIGHT_BOTTOM = "right_bottom"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("cushion", "unknown_cushion", value, (c.value for c in cls))


class ShotType(StrEnum):
    """The shot type of the call (7.2): a special shot is an early pot (6.2, section 8)."""

    NORMAL = "normal"
    EARLY_CUSHION = "early_cushion"  # 8.1-8.2: off a cushion after the ball-to-ball contact
    EARLY_COMBINATION = "early_combination"  # 8.3-8.4: at least two whites take part

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("shot type", "unknown_shot_type", value, (t.value for t in cls))


class CueBall(StrEnum):
    """Which ball the player struck with the cue (1.4, 8.5)."""

    WHITE = "white"
    COLOUR = "colour"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("cue ball", "unknown_cue_ball", value, (b.value for b in cls))


#: Ball names usable in contacts; see the module docstring.
BALLS: tuple[str, ...] = ("cue", "colour", *(f"white{n}" for n in range(1, 8)))
_WHITES = frozenset(b for b in BALLS if b != "colour")

#: The cushions forming the jaws of each pocket (7.5).
JAWS: Mapping[Pocket, frozenset[Cushion]] = {
    Pocket.TOP_LEFT: frozenset({Cushion.TOP, Cushion.LEFT_TOP}),
    Pocket.TOP_RIGHT: frozenset({Cushion.TOP, Cushion.RIGHT_TOP}),
    Pocket.MIDDLE_LEFT: frozenset({Cushion.LEFT_TOP, Cushion.LEFT_BOTTOM}),
    Pocket.MIDDLE_RIGHT: frozenset({Cushion.RIGHT_TOP, Cushion.RIGHT_BOTTOM}),
    Pocket.BOTTOM_LEFT: frozenset({Cushion.BOTTOM, Cushion.LEFT_BOTTOM}),
    Pocket.BOTTOM_RIGHT: frozenset({Cushion.BOTTOM, Cushion.RIGHT_BOTTOM}),
}


@dataclass(frozen=True)
class Contact:
    """One ball-to-ball contact: ``striker`` hit ``struck``."""

    striker: str
    struck: str

    def __post_init__(self) -> None:
        for name in ("striker", "struck"):
            value = getattr(self, name)
            if value not in BALLS:
                _unknown(f"ball in contact.{name}", "unknown_ball", value, BALLS)
        if self.striker == self.struck:
            raise InvalidResult(
                f"contact of {self.striker!r} with itself", code="contact_with_itself"
            )

    @classmethod
    def parse(cls, value: Contact | str | Iterable[str]) -> Contact:
        """Build from ``"a>b"``, a pair ``("a", "b")`` or a Contact."""
        if isinstance(value, Contact):
            return value
        parts = value.split(">") if isinstance(value, str) else list(value)
        if len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise InvalidResult(
                f"contact {value!r} is not 'striker>struck'", code="bad_contact"
            )
        return cls(parts[0].strip(), parts[1].strip())

    def involves(self, ball: str) -> bool:
        return ball in (self.striker, self.struck)

    def __str__(self) -> str:
        return f"{self.striker}>{self.struck}"


PathItem = Cushion | Contact


def _path_item(value: PathItem | str | Iterable[str]) -> PathItem:
    # A string with ">" is a contact, any other string a cushion name.
    if isinstance(value, Cushion | Contact):
        return value
    if isinstance(value, str) and ">" not in value:
        return Cushion(value)
    return Contact.parse(value)


def _as_tuple(name: str, value: object) -> tuple[Any, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidResult(f"{name} must be a sequence, got {value!r}", code="bad_sequence")
    return tuple(value)


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidResult(f"{name} must be true or false, got {value!r}", code="bad_flag")


def _check_keys(kind: str, data: Mapping[str, Any], allowed: Iterable[str]) -> None:
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise InvalidResult(f"unknown {kind} field(s): {', '.join(extra)}", code="unknown_field")


@dataclass(frozen=True)
class Call:
    """The strict call (7.1-7.2, I11), announced before the shot.

    ``cushions`` are the cushions the coloured ball touches, in order;
    ``contacts`` the ball-to-ball contacts, in order (the cue ball striking
    the coloured ball is a contact too, e.g. ``"cue>colour"``). Strings are
    accepted and converted.
    """

    pocket: Pocket
    cushions: tuple[Cushion, ...] = ()
    contacts: tuple[Contact, ...] = ()
    shot_type: ShotType = ShotType.NORMAL

    def __post_init__(self) -> None:
        object.__setattr__(self, "pocket", Pocket(self.pocket))
        cushions = tuple(Cushion(c) for c in _as_tuple("call.cushions", self.cushions))
        object.__setattr__(self, "cushions", cushions)
        contacts = tuple(Contact.parse(c) for c in _as_tuple("call.contacts", self.contacts))
        object.__setattr__(self, "contacts", contacts)
        object.__setattr__(self, "shot_type", ShotType(self.shot_type))

    def to_dict(self) -> dict[str, Any]:
        return {
            "pocket": self.pocket.value,
            "cushions": [c.value for c in self.cushions],
            "contacts": [str(c) for c in self.contacts],
            "shot_type": self.shot_type.value,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Call:
        _check_keys("call", data, ("pocket", "cushions", "contacts", "shot_type"))
        if "pocket" not in data:
            raise InvalidResult("call.pocket is missing", code="missing_field")
        return cls(
            pocket=data["pocket"],
            cushions=data.get("cushions", ()),
            contacts=data.get("contacts", ()),
            shot_type=data.get("shot_type", ShotType.NORMAL),
        )


@dataclass(frozen=True)
class Route:
    """What actually happened to the coloured ball on one shot, as the referee saw it.

    - ``pocket``: where the coloured ball dropped, ``None`` if it was not potted.
    - ``path``: in order, the coloured ball's cushion contacts and the
      ball-to-ball contacts (strings ``"left_top"``, ``"cue>colour"`` accepted).
    - ``cue_ball``: white or the coloured ball itself (1.4, 8.5). With the
      coloured ball as cue ball the name ``"cue"`` is not used: it is ``"colour"``.
    - ``unannounced_contact``: the referee judged that a contact not in the
      call affected the coloured ball's route (7.4), whether or not it shows
      in ``path``.
    - ``jaw_before_drop``: the last item of ``path`` is a touch of a cushion
      next to ``pocket`` right before the drop; it is ignored when judging the
      call (7.5, I11) and when judging an early pot.
    """

    pocket: Pocket | None
    path: tuple[PathItem, ...] = ()
    cue_ball: CueBall = CueBall.WHITE
    unannounced_contact: bool = False
    jaw_before_drop: bool = False

    def __post_init__(self) -> None:
        if self.pocket is not None:
            object.__setattr__(self, "pocket", Pocket(self.pocket))
        object.__setattr__(
            self, "path", tuple(_path_item(i) for i in _as_tuple("route.path", self.path))
        )
        object.__setattr__(self, "cue_ball", CueBall(self.cue_ball))
        _check_flag("route.unannounced_contact", self.unannounced_contact)
        _check_flag("route.jaw_before_drop", self.jaw_before_drop)
        if self.cue_ball is CueBall.COLOUR and any(c.involves("cue") for c in self.contacts):
            raise InvalidResult(
                "route.path names 'cue' but the coloured ball was the cue ball; "
                "call it 'colour' (8.5)",
                code="cue_is_colour",
            )
        if len(self.whites_in_contacts) > 7:
            raise InvalidResult(
                f"route.path names {len(self.whites_in_contacts)} whites; there are 7 (1.1)",
                code="too_many_whites",
            )
        if self.jaw_before_drop:
            if self.pocket is None:
                raise InvalidResult(
                    "route.jaw_before_drop is set but the coloured ball did not drop",
                    code="jaw_without_drop",
                )
            last = self.path[-1] if self.path else None
            if not isinstance(last, Cushion) or last not in JAWS[self.pocket]:
                allowed = ", ".join(sorted(c.value for c in JAWS[self.pocket]))
                raise InvalidResult(
                    f"route.jaw_before_drop needs the last path item to be a jaw of "
                    f"{self.pocket.value} ({allowed}), got {str(last)!r} (7.5)",
                    code="jaw_not_next_to_pocket",
                )

    @property
    def cushions(self) -> tuple[Cushion, ...]:
        """The coloured ball's cushion contacts, in order, jaw touch included."""
        return tuple(i for i in self.path if isinstance(i, Cushion))

    @property
    def contacts(self) -> tuple[Contact, ...]:
        """The ball-to-ball contacts, in order."""
        return tuple(i for i in self.path if isinstance(i, Contact))

    @property
    def cue_name(self) -> str:
        """The cue ball's name in contacts: ``cue``, or ``colour`` when it was the cue ball."""
        return "colour" if self.cue_ball is CueBall.COLOUR else "cue"

    @property
    def implied_contact(self) -> Contact | None:
        """``cue>colour`` when a white cue ball's route names no ball contact at all (D3)."""
        if self.cue_ball is CueBall.WHITE and not self.contacts:
            return Contact("cue", "colour")
        return None

    @property
    def judged_path(self) -> tuple[PathItem, ...]:
        """The path as judged: the implied direct contact first (D3), the jaw touch
        right before the drop left out (7.5)."""
        path = self.path[:-1] if self.jaw_before_drop else self.path
        implied = self.implied_contact
        return path if implied is None else (implied, *path)

    @property
    def whites_in_contacts(self) -> frozenset[str]:
        """The distinct white balls taking part in ball-to-ball contacts (8.3-8.4)."""
        return frozenset(
            b for c in self.contacts for b in (c.striker, c.struck) if b in _WHITES
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "pocket": None if self.pocket is None else self.pocket.value,
            "path": [str(i) for i in self.path],
            "cue_ball": self.cue_ball.value,
            "unannounced_contact": self.unannounced_contact,
            "jaw_before_drop": self.jaw_before_drop,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Route:
        fields = ("pocket", "path", "cue_ball", "unannounced_contact", "jaw_before_drop")
        _check_keys("route", data, fields)
        return cls(
            pocket=data.get("pocket"),
            path=data.get("path", ()),
            cue_ball=data.get("cue_ball", CueBall.WHITE),
            unannounced_contact=data.get("unannounced_contact", False),
            jaw_before_drop=data.get("jaw_before_drop", False),
        )


class EarlyPotCheck(NamedTuple):
    """Whether a route qualifies as an early pot (I10) and the rule that decided it."""

    qualifies: bool
    rule: str


def _cushion_after_contact(route: Route) -> bool | None:
    """8.1-8.2: None if no cushion, else whether the first came after a colour contact."""
    path = route.judged_path
    first_cushion = next((i for i, item in enumerate(path) if isinstance(item, Cushion)), None)
    if first_cushion is None:
        return None
    return any(
        isinstance(item, Contact) and item.involves("colour") for item in path[:first_cushion]
    )


def _combination_of_two_whites(route: Route) -> bool:
    """8.3-8.4: the coloured ball in a combination with at least two whites."""
    in_combination = any(c.involves("colour") for c in route.contacts)
    return in_combination and len(route.whites_in_contacts) >= 2


def qualifies_as_early_pot(route: Route) -> EarlyPotCheck:
    """Judge a route against section 8 as read by I10.

    Qualifies (``rule`` "8.1-8.2") when the coloured ball touched a cushion and
    its first cushion came after its first ball-to-ball contact, or (``rule``
    "8.3-8.4") when at least two whites took part in the contacts, the white
    cue ball counting; the cue ball may be white or the coloured ball (8.5).
    A jaw touch right before the drop is not a cushion here (7.5).
    Otherwise ``rule`` names what failed: "8.2" (a cushion came before the
    coloured ball's ball contact) or "8.3" (no cushion, fewer than two whites).
    """
    cushion_after_contact = _cushion_after_contact(route)
    if cushion_after_contact:
        return EarlyPotCheck(True, "8.1-8.2")
    if _combination_of_two_whites(route):
        return EarlyPotCheck(True, "8.3-8.4")
    return EarlyPotCheck(False, "8.3" if cushion_after_contact is None else "8.2")


@dataclass(frozen=True)
class CallVerdict:
    """The judge's answer: ``rule`` and ``message`` say why a call failed."""

    fulfilled: bool
    rule: str | None = None
    message: str = "call fulfilled (7.3)"

    def __post_init__(self) -> None:
        if self.fulfilled != (self.rule is None):
            raise InvalidResult(
                f"verdict fulfilled={self.fulfilled} with rule={self.rule!r}",
                code="bad_verdict",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"fulfilled": self.fulfilled, "rule": self.rule, "message": self.message}


def _names(items: Iterable[object]) -> str:
    listed = ", ".join(str(i) for i in items)
    return f"[{listed}]"


def _unannounced(called: Iterable[object], actual: Iterable[object]) -> list[object]:
    # Items of the actual route that the call does not name (counting repeats).
    extra = Counter(actual) - Counter(called)
    return [item for item in actual if extra[item] > 0]



def judge_call(call: Call, route: Route) -> CallVerdict:
    """Judge a strict call against the actual route (7.3-7.5, I11).

    The cue ball's first contact with an object ball may be named or left
    out, in the call and (as the direct contact) in the route (D3).
    Checked in this order: an unannounced contact (7.4: flagged by the
    referee, or a cushion/contact in the route that the call does not name);
    the coloured ball potted in the called pocket (7.3); the cushions and
    contacts in the called order (7.3), ignoring a jaw touch of the called
    pocket right before the drop (7.5); for a special shot, that the route is
    that kind of early pot (7.2, 8.x).
    """
    path = route.judged_path
    cushions = tuple(i for i in path if isinstance(i, Cushion))
    contacts = tuple(i for i in path if isinstance(i, Contact))
    # D3: the cue ball's first contact is the shot; a call may name it or leave it out.
    if contacts and contacts[0].striker == route.cue_name and call.contacts[:1] != contacts[:1]:
        contacts = contacts[1:]
    if route.unannounced_contact:
        return CallVerdict(
            False, "7.4", "an unannounced contact affected the coloured ball's route"
        )
    for kind, called, actual in (
        ("cushion", call.cushions, cushions),
        ("contact", call.contacts, contacts),
    ):
        extra = _unannounced(called, actual)
        if extra:
            return CallVerdict(
                False, "7.4", f"unannounced {kind} {_names(extra)} in the coloured ball's route"
            )
    if route.pocket is None:
        return CallVerdict(False, "7.3", "the coloured ball was not potted")
    if route.pocket is not call.pocket:
        return CallVerdict(
            False,
            "7.3",
            f"called pocket {call.pocket.value}, the coloured ball dropped in {route.pocket.value}",
        )
    # With a jaw touch the call may name that cushion or leave it out (7.5).
    if call.cushions not in (cushions, route.cushions):
        return CallVerdict(
            False,
            "7.3",
            f"called cushions {_names(call.cushions)}, actual {_names(cushions)}",
        )
    if call.contacts != contacts:
        return CallVerdict(
            False,
            "7.3",
            f"called contacts {_names(call.contacts)}, actual {_names(contacts)}",
        )
    if call.shot_type is ShotType.EARLY_CUSHION and not _cushion_after_contact(route):
        return CallVerdict(
            False,
            "8.2",
            "called an early_cushion shot, which needs the coloured ball to touch a cushion "
            "after its ball-to-ball contact (8.1-8.2)",
        )
    if call.shot_type is ShotType.EARLY_COMBINATION and not _combination_of_two_whites(route):
        return CallVerdict(
            False,
            "8.3",
            "called an early_combination shot, which needs at least two whites in the "
            f"combination, the white cue ball counting (8.3-8.4); "
            f"took part: {len(route.whites_in_contacts)}",
        )
    return CallVerdict(True)

