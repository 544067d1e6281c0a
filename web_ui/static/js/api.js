// HTTP calls: referee commands (with the token remembered on this device) and tables.

const TOKEN_KEY = "shotclock.token";

export function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ""; } catch { return ""; }
}

export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch { /* private mode: the token lives for this page only */ }
}

/** Result of a request: {ok, status, body}; status 0 when the server could not be reached,
 * or (with ``timeoutMs``) did not answer in time: a lost answer must not hold up a page
 * that asks again and again. */
export async function requestJson(method, path, body, { timeoutMs } = {}) {
  const headers = { "content-type": "application/json" };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
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
