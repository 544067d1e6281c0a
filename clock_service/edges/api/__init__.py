"""The HTTP and WebSocket API: ``create_app`` mounts one router per resource over the parts
the composition root (``clock_service/edges/cli/main.py``) built.

- ``app.py``: ``create_app``, the lifespan that starts and stops the parts, security headers
- ``common.py``: error answers, the referee check, what the routers share
- ``runtime.py``: ``ServedRuntime``, what the API needs of a runtime
- ``health.py``, ``tables.py``, ``commands.py``, ``events.py``, ``hardware.py``: the routes
- ``sockets.py``: the table and hall WebSockets, each session a small state machine
- elsewhere: the matches and the protocol page (``reports/routes.py``), the camera
  (``camera/routes.py``), the pages (``web_ui``)
"""

from clock_service.edges.api.app import Part, create_app
from clock_service.edges.api.sockets import CLOSE_POLICY, CLOSE_TRY_LATER, CLOSE_UNKNOWN_TABLE
from clock_service.service.doors import status_of, token_matches
from clock_service.service.live import ServedRuntime

__all__ = ["create_app", "Part", "ServedRuntime", "status_of", "token_matches", "CLOSE_POLICY",
           "CLOSE_UNKNOWN_TABLE", "CLOSE_TRY_LATER"]
