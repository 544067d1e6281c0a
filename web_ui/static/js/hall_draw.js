// The draw on the hall page (issue 25): import a file, each table's queue and what it
// plays, the matches for the next free table, and a form to put a match in a table's
// queue (a phone's way; no dragging needed). Reads GET /api/draw every 5 s while shown and
// after every change; writes with the referee token remembered on this device.

import { getToken, requestJson } from "./api.js";
import { applyI18n, onLangChange, t } from "./i18n.js";
import "./tournament.js"; // its texts

const REFRESH_MS = 5000;

export function mountDraw(root) {
  const $ = (sel) => root.querySelector(sel);
  let view = null;
  let timer = 0;
  let shown = false;

  async function refresh() {
    clearTimeout(timer);
    const result = await requestJson("GET", "/api/draw");
    if (result.ok) {
      view = result.body;
      render();
    }
    if (shown) timer = setTimeout(refresh, REFRESH_MS);
  }

  function item(match) {
    const li = document.createElement("li");
    li.dataset.number = String(match.number);
    li.dataset.status = match.status;
    const where = [match.event, match.round].filter(Boolean).join(", ");
    li.textContent = `${match.number}. ${match.players[0]} – ${match.players[1]} · ` +
      t("label.race_to", { n: match.race_to }) + (where ? ` · ${where}` : "");
    return li;
  }

  function list(title, matches, extra) {
    const box = document.createElement("div");
    box.className = "draw-queue";
    const h = document.createElement("h3");
    h.textContent = title;
    box.append(h);
    const ul = document.createElement("ol");
    if (extra) ul.append(extra);
    for (const m of matches) ul.append(item(m));
    if (!matches.length && !extra) {
      const li = document.createElement("li");
      li.className = "muted";
      li.textContent = t("draw.empty");
      ul.append(li);
    }
    box.append(ul);
    return box;
  }

  function render() {
    if (!view) return;
    const queues = $("#draw-queues");
    queues.replaceChildren();
    for (const [table, q] of Object.entries(view.tables)) {
      let playing = null;
      if (q.playing) {
        playing = item(q.playing);
        playing.classList.add("playing");
        playing.textContent += ` · ${t("draw.playing")}`;
      }
      const box = list(t("draw.queue", { table }), q.queue, playing);
      box.dataset.table = table;
      queues.append(box);
    }
    const free = list(t("draw.unassigned"), view.unassigned);
    free.dataset.table = "";
    queues.append(free);
    // The assign form: every queued match, every table or the next free one.
    const numbers = $('select[name="number"]');
    const chosen = numbers.value;
    numbers.replaceChildren(...view.matches.filter((m) => m.status === "queued").map((m) => {
      const o = document.createElement("option");
      o.value = String(m.number);
      o.textContent = `${m.number}. ${m.players[0]} – ${m.players[1]}`;
      return o;
    }));
    if ([...numbers.options].some((o) => o.value === chosen)) numbers.value = chosen;
    const tables = $('select[name="table"]');
    const to = tables.value;
    tables.replaceChildren(...["", ...Object.keys(view.tables)].map((id) => {
      const o = document.createElement("option");
      o.value = id;
      o.textContent = id ? t("draw.queue", { table: id }) : t("draw.next_free");
      return o;
    }));
    if ([...tables.options].some((o) => o.value === to)) tables.value = to;
  }

  function say(ok, lines) {
    const out = $("#draw-result");
    out.className = `result ${ok ? "ok" : "error"}`;
    out.replaceChildren(...lines.map((line) => {
      const div = document.createElement("div");
      div.textContent = line;
      return div;
    }));
  }

  // Buttons, not submit buttons: the hall's own form keeps the page's one submit button.
  $("#draw-upload").addEventListener("submit", (ev) => ev.preventDefault());
  $("#draw-assign").addEventListener("submit", (ev) => ev.preventDefault());
  $("#draw-upload button").addEventListener("click", async () => {
    const file = $("#draw-upload").elements.file.files[0];
    if (!file) return;
    const json = file.name.toLowerCase().endsWith(".json");
    const headers = { "content-type": json ? "application/json" : "text/csv" };
    const token = getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch("/api/draw", { method: "POST", headers, body: await file.text() });
    } catch (err) {
      say(false, [String(err)]);
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (response.ok) {
      say(true, [t("draw.imported", { n: body.imported })]);
    } else {
      const error = body.error || {};
      const problems = error.problems || [];
      say(false, [t("draw.refused"), ...(problems.length
        ? problems.map((p) => t("draw.line", p)) : [error.message || `HTTP ${response.status}`])]);
    }
    refresh();
  });

  $("#draw-assign button").addEventListener("click", async () => {
    const f = $("#draw-assign").elements;
    if (!f.number.value) return;
    const result = await requestJson("POST", `/api/draw/${encodeURIComponent(f.number.value)}/assign`,
      { table: f.table.value || null });
    if (!result.ok) say(false, [(result.body && result.body.error && result.body.error.message) || `HTTP ${result.status}`]);
    refresh();
  });

  onLangChange(render);
  applyI18n(root);
  return {
    show() {
      if (shown) return;
      shown = true;
      root.classList.remove("hidden");
      refresh();
    },
    refresh,
  };
}
