// Hall view: every table with its live clock (one feed per table), links to its pages,
// and a form to create a table. The table list is re-read every few seconds so tables
// created elsewhere appear by themselves.

import { createTable, listTables } from "./api.js";
import { TableConnection, showStatus } from "./connection.js";
import { animate, render } from "./countdown.js";
import { applyI18n, bindLangToggle, errorText, lang, onLangChange, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const cards = new Map(); // table id -> {el, conn, state}
const LIST_EVERY_MS = 3000;

function addTable(id, initial) {
  if (cards.has(id)) return;
  const el = $("table-card").content.firstElementChild.cloneNode(true);
  el.dataset.table = id;
  el.querySelector(".id").textContent = id;
  const q = `?table=${encodeURIComponent(id)}`;
  el.querySelector(".l-referee").href = `/referee${q}`;
  el.querySelector(".l-overlay").href = `/overlay${q}`;
  el.querySelector(".l-display").href = `/display${q}`;
  applyI18n(el);
  const entry = { el, state: initial || null, conn: null };
  entry.conn = new TableConnection(id, {
    onState: (s) => { entry.state = s; drawCard(entry); },
    onStatus: (status) => showStatus(el.querySelector(".conn"), status, t),
  });
  showStatus(el.querySelector(".conn"), "connecting", t);
  if (initial) entry.conn.offerState(initial, "list");
  cards.set(id, entry);
  const sorted = [...cards.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const next = cards.get(sorted[sorted.indexOf(id) + 1]);
  $("tables").insertBefore(el, next ? next.el : null);
  $("empty").classList.add("hidden");
  entry.conn.start();
}

function drawCard(entry) {
  const { el, state } = entry;
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const p = el.querySelector(`.p${i}`);
    p.querySelector(".name").textContent = state.players[i];
    const stats = [`${t("label.fouls")} ${state.fouls[i]}`, `${t("label.extensions")} ${state.extensions_left[i]}`];
    if (Array.isArray(state.whites)) stats.push(`${t("label.whites")} ${state.whites[i]}`);
    if (Array.isArray(state.frames_won)) stats.push(`${t("label.frames")} ${state.frames_won[i]}`);
    p.querySelector(".stats").textContent = stats.join(" · ");
    p.classList.toggle("at-table", state.player === i && state.phase !== "frame_over");
  }
  el.querySelector(".phase").textContent = t(`phase.${state.timer === false ? "off" : state.phase}`);
  el.querySelector(".round").textContent = state.round;
  el.querySelector(".frame").textContent = state.frame;
  tickCard(entry);
}

function tickCard(entry) {
  if (!entry.state) return;
  const { text, stage } = render(entry.state, entry.conn.serverNow());
  const clock = entry.el.querySelector(".clock");
  const shown = text || "–";
  if (clock.textContent !== shown) clock.textContent = shown;
  if (entry.el.dataset.stage !== stage) entry.el.dataset.stage = stage;
}

async function refreshList() {
  const result = await listTables();
  if (result.ok && Array.isArray(result.body)) {
    for (const s of result.body) addTable(s.table, s);
    if (cards.size === 0) $("empty").classList.remove("hidden");
  }
}

// -- the create form -------------------------------------------------------------------------
const ms = (value) => Math.round(Number(value) * 1000);

$("create-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  const out = $("create-result");
  const profile = {
    shot_ms: ms(f.shot_s.value),
    full_rounds: Number(f.full_rounds.value),
    step_ms: ms(f.step_s.value),
    floor_ms: ms(f.floor_s.value),
    extension_ms: ms(f.extension_s.value),
    extensions_per_frame: Number(f.extensions_per_frame.value),
    warnings_ms: f.warnings_s.value.split(/[,;\s]+/).filter(Boolean).map(ms),
  };
  const body = {
    id: f.id.value.trim(),
    players: [f.a.value.trim(), f.b.value.trim()],
    timer: f.timer.checked,
    profile,
    race_to: f.race_to.value ? Number(f.race_to.value) : null,  // empty: open-ended match
  };
  const result = await createTable(body);
  if (result.ok) {
    out.className = "result ok";
    out.textContent = t("hall.created", { id: body.id });
    addTable(body.id, result.body);
  } else {
    const error = (result.body && result.body.error) || { code: "error", message: `HTTP ${result.status}` };
    const { text, rule } = errorText(error);
    out.className = "result error";
    // The service words its details in English: shown on the English page only.
    const detail = lang === "en" && error.message && text !== error.message ? ` — ${error.message}` : "";
    out.textContent = `${text}${rule ? ` (${rule})` : ""}${detail}`;
  }
});

applyI18n();
bindLangToggle($("lang"));
onLangChange(() => {
  for (const entry of cards.values()) {
    showStatus(entry.el.querySelector(".conn"), entry.conn.status, t);
    drawCard(entry);
  }
});
refreshList();
setInterval(refreshList, LIST_EVERY_MS);
animate(() => { for (const entry of cards.values()) tickCard(entry); });
