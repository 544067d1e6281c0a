// HTTP calls: referee commands (with the token remembered on this device) and tables.
//
// Two tokens a browser may hold: a referee's console keeps its token on the device
// (localStorage: the phone at the table stays signed in), a director signs in on the desk
// or the hall for this tab only (sessionStorage: a laptop left at the desk forgets it when
// the tab closes), so a console link opened on the director's laptop never replaces the
// director's token, nor the other way round. A page says which one its requests carry
// (``useToken``); the console's is the default.

const TOKEN_KEY = "shotclock.token";
const DIRECTOR_KEY = "shotclock.director";

// A token kept in a storage (``where``: () => localStorage or sessionStorage), "" if none.
function kept(where, key) {
  try { return where().getItem(key) || ""; } catch { return ""; }
}

function keep(where, key, token) {
  try {
    if (token) where().setItem(key, token);
    else where().removeItem(key);
  } catch { /* private mode: the token lives for this page only */ }
}

export const getToken = () => kept(() => localStorage, TOKEN_KEY);
export const setToken = (token) => keep(() => localStorage, TOKEN_KEY, token);
export const getDirectorToken = () => kept(() => sessionStorage, DIRECTOR_KEY);
export const setDirectorToken = (token) => keep(() => sessionStorage, DIRECTOR_KEY, token);

let pageToken = getToken;

/** The token this page's requests carry: ``() => string`` (default: the console's). */
export function useToken(fn) { pageToken = fn; }

/** A console opened from the desk's link or QR code, ``/referee?table=7#token=...``: the
 * token is kept as a typed one is, and taken out of the address at once. The part after
 * ``#`` never leaves the browser (no server, proxy or access log sees it), and once taken
 * out it is in neither the history nor a bookmark. True when a token came with the link. */
export function takeTokenFromLink() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get("token");
  if (token === null) return false;
  hash.delete("token");
  const rest = hash.toString();
  history.replaceState(history.state, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
  if (!token.trim()) return false;
  setToken(token.trim());
  return true;
}

/** Result of a request: {ok, status, body}; status 0 when the server could not be reached,
 * or (with ``timeoutMs``) did not answer in time: a lost answer must not hold up a page
 * that asks again and again. */
export async function requestJson(method, path, body, { timeoutMs, contentType, token: offered } = {}) {
  const headers = { "content-type": contentType || "application/json" };
  const token = offered ?? pageToken(); // ``token``: this one instead of the page's
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    const response = await fetch(path, {
      method,
      headers,
      // ``contentType`` given: ``body`` is sent as it is (a draw file's text).
      body: body === undefined ? undefined : contentType ? body : JSON.stringify(body),
      cache: "no-store",
      signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
    });
    let data = null;
    try { data = await response.json(); } catch { data = null; }
    return { ok: response.ok, status: response.status, body: data };
  } catch (err) {
    return { ok: false, status: 0, body: { error: { code: "network", message: String(err) } } };
  }
}

export function sendCommand(table, command, fields = {}) {
  return requestJson("POST", `/api/tables/${encodeURIComponent(table)}/commands`,
    { command, source: "web", ...fields });
}

export function listTables() {
  return requestJson("GET", "/api/tables");
}

export function createTable(body) {
  return requestJson("POST", "/api/tables", body);
}
