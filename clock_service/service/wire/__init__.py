"""The wire: every shape the service sends or takes, as pydantic models (validation, OpenAPI,
AsyncAPI). One module per job:

- ``fields``: The fields every shape shares: the command envelope's words, human text (one rule,
- ``http``: The HTTP API's own request and response shapes: tables, profiles, errors, health, the
- ``state``: A table's state and the rules' report as the WebSocket and HTTP send them: the time
- ``events``: The events: one data model per event type (from clock_service/core/events.py), each
- ``hall``: The hall feed (/ws/hall): every table's card on one socket.
- ``commands``: Messages to a table and their replies: ping and pong, ack and error, and one model
  per
- ``matches``: Matches as records (GET /api/matches, /api/matches/{id};
  clock_service/edges/reports/).
- ``mqtt``: MQTT (SHOTCLOCK_MQTT_URL, clock_service/edges/mqtt): the same messages on a broker's
"""
