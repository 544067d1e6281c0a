// The hall's one WebSocket (/ws/hall), shared by the hall page and the director's desk:
// its first message is every table's card, then a card whenever a table changes or is
// created, "removed" when one is archived. (One socket per table would be a hundred
// sockets for a hall of tables, and the server caps sockets per address.)
//
// Its lifecycle is connection.js's Link, the same as a table's: a hung service (SIGSTOP) or
// a silent link says "stale" after staleAfter() (2000 ms at the default 1000 ms pings), so
// every card says "connection lost" and its digits stop within 2.5 s (issue 23: the hall
// kept counting); a closed socket is opened again with jittered backoff.

import { Link, wsBase } from "./connection.js";

/** The hall feed: handlers onStatus(status), onHall(tables, readOnly), onTable(table),
 * onRemoved(tableId). */
export class HallFeed extends Link {
  _url() {
    return `${wsBase()}/ws/hall`;
  }

  _message(msg) {
    switch (msg.type) {
      case "hall":
        this._greeted(msg.server_time);
        this._setStatus("live");
        this.handlers.onHall(msg.tables, msg.read_only === true);
        break;
      case "table":
        this.handlers.onTable(msg.table);
        break;
      case "removed":
        this.handlers.onRemoved(msg.table);
        break;
      default:
        break; // status (faults): shown on each table's own pages
    }
  }
}
