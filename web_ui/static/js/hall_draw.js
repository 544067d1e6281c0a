// The draw on the hall page (issue 25): import a file, each table's queue and what it
// plays, the matches for the next free table, and a form to put a match in a table's
// queue (a phone's way; no dragging needed). Reads GET /api/draw every 5 s while shown and
// after every change; writes with the director's token signed in on the page (js/signin.js).
// The director's desk (/desk) does all of this and more; this is the hall's short form.

import { requestJson } from "./api.js";
import { applyI18n, errorText, onLangChange, t } from "./i18n.js";
import { drawProblem, wireFilePick } from "./tournament.js";

const REFRESH_MS = 5000;

/** ``askDirector(status)``: a 401/403 opens the director's sign-in (hall.js). */
export function mountDraw(root, { askDirector = () => false } = {}) {
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
    // A list without markers: each match says its own draw number ("3. Ivanov – Petrov"),
    // which is not its place in the queue (issue 36: "1. 1." and "1. no match").
    const ul = document.createElement("ul");
    ul.className = "draw-list";
    if (extra) ul.append(extra);
    for (const m of matches) ul.append(item(m));
    if (ul.children.length) box.append(ul);
    if (!matches.length && !extra) {
      const none = document.createElement("p");
      none.className = "muted";
      none.textContent = t("draw.empty");
      box.append(none);
    }
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
  wireFilePick($(".file-pick"));
  $("#draw-upload").addEventListener("submit", (ev) => ev.preventDefault());
  $("#draw-assign").addEventListener("submit", (ev) => ev.preventDefault());
  $("#draw-upload button").addEventListener("click", async () => {
    const file = $("#draw-upload").elements.file.files[0];
    if (!file) return;
    const result = await importDraw(file);
    askDirector(result.status);
    say(result.ok, result.lines);
    refresh();
  });

  $("#draw-assign button").addEventListener("click", async () => {
    const f = $("#draw-assign").elements;
    if (!f.number.value) return;
    const result = await requestJson("POST", `/api/draw/${encodeURIComponent(f.number.value)}/assign`,
      { table: f.table.value || null });
    if (!result.ok) {
      askDirector(result.status);
      say(false, [refusal(result)]);
    }
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

/** A refused request in the page's language. */
export function refusal(result) {
  const error = (result.body && result.body.error) || { code: "network", message: `HTTP ${result.status}` };
  return errorText(error).text;
}

/** POST a draw file: {ok, status, lines} with what to say, every problem in the page's
 * language ("line 4: player2 “=1+1” starts with “=”..."). */
export async function importDraw(file) {
  const json = file.name.toLowerCase().endsWith(".json");
  const result = await requestJson("POST", "/api/draw", await file.text(),
    { contentType: json ? "application/json" : "text/csv" });
  if (result.ok) return { ok: true, status: result.status, lines: [t("draw.imported", { n: result.body.imported })] };
  const problems = (result.body && result.body.error && result.body.error.problems) || [];
  return { ok: false, status: result.status,
    lines: [t("draw.refused"), ...(problems.length ? problems.map(drawProblem) : [refusal(result)])] };
}
