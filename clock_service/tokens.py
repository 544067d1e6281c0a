"""Referee tokens: what a service accepts as a credential.

A token guessed or read off the example env file controls every clock it covers. On a
loopback address nothing but this machine can try one; on a LAN address (the venue's
Wi-Fi) anyone in the hall can, so there a token must be at least ``MIN_LENGTH`` characters,
not a placeholder from the shipped examples, and not a run of one or two characters
(issue 20, finding 4: ``CHANGE-ME`` and ``1`` were accepted). ``shotclock tls init`` and
``python3 -c "import secrets; print(secrets.token_urlsafe(24))"`` make good ones.
"""

from __future__ import annotations

__all__ = ["MIN_LENGTH", "PLACEHOLDERS", "weak_token_reason"]

MIN_LENGTH = 16
# The placeholders of the shipped examples (deploy/*.env*), anywhere in a token, any case
# (``change-me-to-a-long-random-token`` is long and still the example's).
PLACEHOLDERS = ("change-me", "changeme", "change_me", "replace-me", "replace_me")


def weak_token_reason(token: str) -> str | None:
    """Why ``token`` may not guard a service on a LAN address, or None if it may."""
    folded = token.strip().lower()
    for placeholder in PLACEHOLDERS:
        if placeholder in folded:
            return f"it is the placeholder {placeholder.upper()!r} from the examples"
    if len(token) < MIN_LENGTH:
        return f"it has {len(token)} characters; at least {MIN_LENGTH} are needed"
    if len(set(token)) < 6:
        return f"it uses only {len(set(token))} different characters"
    return None
