"""``/api/tokens``: a director issues, lists and revokes tokens (clock_service/service/auth.py).

The token itself is in the answer to ``POST`` only (the store keeps its digest): hand it
to the referee's console (``?token=`` once, or the console's token field) or device.
A revoked token's next request is refused: no restart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.convertors import Convertor, register_url_convertor

from clock_service.service.auth import Authority
from clock_service.service.doors import credential_of, error_responses
from clock_service.service.wire.fields import PersonName, TableId

__all__ = ["tokens_router", "IssueToken"]


class _TokenId(Convertor[str]):
    """A token's id as ``Authority.issue`` makes it (12 hex digits), so that
    ``/api/tokens/me`` is not also a token's path (its Allow header named DELETE)."""

    regex = "[0-9a-f]{12}"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("token_id", _TokenId())


class IssueToken(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["referee", "director"] = Field(
        default="referee", description="referee (its tables only) or director",
        examples=["referee"])
    tables: list[TableId] | None = Field(default=None, max_length=200,
                                         description="a referee's tables (ids)",
                                         examples=[["7"]])
    name: PersonName = Field(description="who holds it, as the log will record",
                             examples=["table 7 referee", "Судья стола 7"])


def tokens_router(authority: Authority, now_ms: Callable[[], float]) -> APIRouter:
    """Issuing, listing and revoking tokens over ``authority``; who may is in the access
    table (clock_service/service/access.py: the director; ``/me`` any token)."""
    router = APIRouter(prefix="/api/tokens", tags=["tokens"])

    @router.post("", status_code=201, responses=error_responses(400, 401, 403, 422, 429))
    async def issue(body: IssueToken) -> dict[str, Any]:
        """Issue a token (a director's token): ``{"role": "referee", "tables": ["7"],
        "name": ...}``. 201 with ``token`` (shown only here) and its ``id``."""
        record, token = authority.issue(body.role, body.tables, body.name, now_ms())
        return {**record, "token": token}

    @router.get("")
    async def listed() -> list[dict[str, Any]]:
        """Every issued token (never the token itself), revoked ones with ``revoked_at``."""
        return authority.listed()

    @router.delete("/{token_id:token_id}", responses=error_responses(401, 403, 404, 429))
    async def revoke(token_id: Annotated[str, Path(pattern=f"^{_TokenId.regex}$")]
                     ) -> dict[str, Any]:
        """Revoke a token: refused from its next request on."""
        return authority.revoke(token_id, now_ms())

    @router.get("/me")
    async def me(request: Request) -> dict[str, Any]:
        """What the offered token is (role, name, tables): a console checks its token."""
        return credential_of(request).to_dict()

    return router
