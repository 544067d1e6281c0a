// Hall view: every table with its live clock, links to its pages, and a form to create a
// table where the service creates them (the hall message's read_only: not on the hall
// service, whose tables are created on their own Pi). A card whose state is not live (the
// hall service says `live: false`: the table's service is offline) or while this page has
// lost the service stops counting and says so, large: never a countdown from old data.
// ONE WebSocket for the whole hall (js/hallfeed.js).

import { createTable } from "./api.js";
import { showStatus } from "./connection.js";
import { animate, render } from "./countdown.js";
import { applyI18n, bindLangToggle, errorText, lang, onLangChange, shownPlayers, t } from "./i18n.js";
import { HallFeed } from "./hallfeed.js";
import { mountDraw } from "./hall_draw.js";
import { mountSignIn } from "./signin.js";
import { drawMatchClock } from "./tournament.js";
import { fitText, refitOn } from "./fit.js";
import { ClockPhase } from "./phases.js";

const $ = (id) => document.getElementById(id);
const cards = new Map(); // table id -> {el, state}
// Every card's clock, at the next change of any of them (countdown.js animate).
const looks = animate(() => {
  let next = Infinity;
  for (const entry of cards.values()) next = Math.min(next, tickCard(entry));
  return next;
});
// The director signs in here too (js/signin.js): creating tables and the draw need one.
const signin = mountSignIn({ who: $("who"), button: $("signin"),
  out: $("signout"), onChange: () => {}, deviceToken: true });
/** A refusal for want of the director: the sign-in opens, saying why. True if it was one. */
function askDirector(status) {
  if (status !== 401 && status !== 403) return false;
  signin.open(t("signin.needed"));
  return true;
}
const draw = mountDraw($("draw"), { askDirector });

const feed = new HallFeed({
  onStatus: (status) => {
    for (const entry of cards.values()) {
      showStatus(entry.el.querySelector(".conn"), status, t);
      drawLiveness(entry);
    }
  },
  onHall: (tables, readOnly) => {
    // The create form only where the service creates tables (its own word, not a guess).
    $("create").classList.toggle("hidden", readOnly);
    if (!readOnly) draw.show(); // the draw lives where the tables are served
    const live = new Set(tables.map((s) => s.table));
    for (const id of [...cards.keys()]) if (!live.has(id)) removeTable(id);
    for (const s of tables) setTable(s);
    if (cards.size === 0) $("empty").classList.remove("hidden");
  },
  onTable: (s) => setTable(s),
  onRemoved: (id) => removeTable(id),
});

function setTable(state) {
  const entry = cards.get(state.table) || addTable(state.table);
  // Newer only: a card from the hall message may cross an older one on the way.
  if (entry.state && typeof state.seq === "number" && state.seq < entry.state.seq) return;
  state.players_given = state.players;
  state.players = shownPlayers(state.players); // the default table's, in the page's language
  entry.state = state;
  drawCard(entry);
}

function removeTable(id) {
  const entry = cards.get(id);
  if (!entry) return;
  entry.el.remove();
  cards.delete(id);
  if (cards.size === 0) $("empty").classList.remove("hidden");
}

function addTable(id, initial) {
  const known = cards.get(id);
  if (known) return known;
  const el = $("table-card").content.firstElementChild.cloneNode(true);
  el.dataset.table = id;
  el.querySelector(".id").textContent = id;
  const q = `?table=${encodeURIComponent(id)}`;
  el.querySelector(".l-referee").href = `/referee${q}`;
  el.querySelector(".l-overlay").href = `/overlay${q}`;
  el.querySelector(".l-display").href = `/display${q}`;
  el.querySelector(".l-stats").href = `/stats${q}`;
  el.querySelector(".l-matches").href = `/api/matches?table=${encodeURIComponent(id)}`;
  applyI18n(el);
  const entry = { el, state: null };
  showStatus(el.querySelector(".conn"), feed.status, t);
  cards.set(id, entry);
  const sorted = [...cards.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const next = cards.get(sorted[sorted.indexOf(id) + 1]);
  $("tables").insertBefore(el, next ? next.el : null);
  $("empty").classList.add("hidden");
  if (initial) setTable(initial);
  return entry;
}

function drawCard(entry) {
  const { el, state } = entry;
  if (!state) return;
  const m = state.match || { score: state.frames_won || [0, 0], race_to: null, over: false };
  for (let i = 0; i < 2; i++) {
    const p = el.querySelector(`.p${i}`);
    p.querySelector(".name").textContent = state.players[i];
    // Fouls and the extension large (3 m): a player on one foul in red, an extension used struck.
    const stats = p.querySelector(".stats");
    stats.replaceChildren(
      mark("fouls", `${t("label.fouls")} ${state.fouls[i]}`, state.fouls[i]),
      ...(state.timer === false ? [] : [mark("ext", `${t("label.extensions")} ${state.extensions_left[i]}`, state.extensions_left[i])]),
      ...(Array.isArray(state.whites) ? [mark("whites", `${t("label.whites")} ${state.whites[i]}`, state.whites[i])] : []));
    p.classList.toggle("at-table", state.player === i && state.phase !== ClockPhase.FRAME_OVER);
  }
  el.querySelector(".score").textContent = `${m.score[0]} : ${m.score[1]}`;
  el.querySelector(".race").textContent = m.race_to ? ` · ${t("label.race_to", { n: m.race_to })}` : "";
  const matchOver = state.phase === ClockPhase.FRAME_OVER && m.over;
  const phaseKey = matchOver ? "match_over" : state.timer === false && state.phase !== ClockPhase.FRAME_OVER ? "off" : state.phase;
  const phase = t(`phase.${phaseKey}`);
  el.querySelector(".phase").textContent = state.live === false ? t("hall.last_phase", { phase }) : phase;
  el.querySelector(".round").textContent = state.round;
  el.querySelector(".frame").textContent = state.frame;
  // The winner in full and the score (issue 23: a finished 0:2 match said "frame over ·
  // Frame 2", with no score and no "match over"), in the one order of every page: the left
  // player's : the right player's (issue 36: winner first contradicted the card's header).
  const winner = matchOver ? m.winner : state.frame_winner;
  const result = el.querySelector(".result");
  if (state.phase === ClockPhase.FRAME_OVER && winner != null) {
    const score = `${m.score[0]}:${m.score[1]}`;
    result.textContent = t(matchOver ? "hall.match_won" : "hall.frame_won",
      { name: state.players[winner], score, frame: state.frame });
  } else {
    result.textContent = state.phase === ClockPhase.FRAME_OVER ? t("card.no_winner") : "";
  }
  const match = state.match && state.match.number != null ? `${state.table}.${state.match.number}` : null;
  const report = el.querySelector(".l-report");
  if (match) report.href = `/report?match=${encodeURIComponent(match)}&lang=${lang}`;
  report.classList.toggle("hidden", !match);
  // One look per situation, told apart at a glance (CSS on data-look).
  for (let i = 0; i < 2; i++) fitText(el.querySelector(`.p${i} .name`), { min: 12 });
  el.dataset.look = matchOver ? "match_over" : state.phase === ClockPhase.FRAME_OVER ? "frame_over"
    : state.phase === ClockPhase.EXPIRED ? "time_foul" : state.phase === ClockPhase.RUNNING ? "running" : "idle";
  drawLiveness(entry);
}

function mark(kind, text, n) {
  const span = document.createElement("span");
  span.className = `mark ${kind}`;
  span.dataset.n = String(n);
  span.textContent = text;
  return span;
}

/** live | stale (the service says this state is not live) | lost (this page lost the feed). */
function liveness(entry) {
  if (feed.status !== "live") return "lost";
  return entry.state && entry.state.live === false ? "stale" : "live";
}

function drawLiveness(entry) {
  const live = liveness(entry);
  const { el, state } = entry;
  el.dataset.live = live;
  const title = el.querySelector(".stale-title");
  const why = el.querySelector(".stale-why");
  if (live === "lost") {
    title.textContent = t("hall.lost");
    why.textContent = t("hall.lost_why");
  } else if (live === "stale") {
    title.textContent = t("hall.offline");
    const since = state.stale_since ? new Date(state.stale_since).toLocaleTimeString(lang === "ru" ? "ru-RU" : "en-GB") : "–";
    why.textContent = t("hall.offline_why", { time: since });
  } else {
    title.textContent = "";
    why.textContent = "";
  }
  looks.now(); // its clock too, and the next look aimed again
}

/** Draws a card's clock; the ms until it changes by itself (countdown.js render's next). */
function tickCard(entry) {
  if (!entry.state) return Infinity;
  const live = liveness(entry);
  // Lost: the digits stay as they were when the feed went (nothing counts on old data).
  if (live === "lost" && entry.shown) return Infinity;
  // Not live: the last known time (remaining_ms as of stale_since), not counted down.
  const state = live === "stale" && entry.state.phase === ClockPhase.RUNNING
    ? { ...entry.state, phase: ClockPhase.PAUSED } : entry.state;
  const { text, stage, next } = render(state, feed.serverNow());
  entry.shown = text;
  const clock = entry.el.querySelector(".clock");
  const shown = text || "–";
  if (clock.textContent !== shown) clock.textContent = shown;
  if (entry.el.dataset.stage !== stage) entry.el.dataset.stage = stage;
  drawMatchClock(entry.el.querySelector(".match-clock"), state, feed.serverNow());
  return next;
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
  // The first match's protocol header (left out when empty: the service wants text or none).
  for (const key of ["event", "referee"]) if (f[key].value.trim()) body[key] = f[key].value.trim();
  const result = await createTable(body);
  askDirector(result.status);
  if (result.ok) {
    out.className = "result ok";
    out.textContent = t("hall.created", { id: body.id });
    setTable(result.body);
  } else {
    const error = (result.body && result.body.error) || { code: "error", message: `HTTP ${result.status}` };
    const { text, rule } = errorText(error);
    out.className = "result error";
    // A bad profile: name the field, in the page's words, in either language (issue 23).
    const field = error.code === "invalid_profile" ? profileField(error.message || "") : null;
    if (field) {
      out.textContent = `${text}: ${t(field.label)}`;
      const input = ev.target.elements[field.input];
      if (input) input.focus();
      if (lang !== "en") return;
    }
    // The service words its details in English: shown on the English page only.
    const detail = lang === "en" && error.message && text !== error.message ? ` — ${error.message}` : "";
    out.textContent = `${text}${rule ? ` (${rule})` : ""}${detail}`;
  }
});

// The profile's fields as the service names them in its messages, and the form's.
const PROFILE_FIELDS = [
  ["extensions_per_frame", "extensions_per_frame", "hall.ext_per_frame"],
  ["extension_ms", "extension_s", "hall.extension_s"], ["shot_ms", "shot_s", "hall.shot_s"],
  ["floor_ms", "floor_s", "hall.floor_s"], ["step_ms", "step_s", "hall.step_s"],
  ["full_rounds", "full_rounds", "hall.full_rounds"], ["warnings_ms", "warnings_s", "hall.warnings_s"],
];

function profileField(message) {
  // The field the message is about comes first in it ("floor_ms (25000) must not be above
  // shot_ms ..."); extensions_per_frame before extension_ms, which it contains.
  let best = null;
  for (const field of PROFILE_FIELDS) {
    const at = message.indexOf(field[0]);
    if (at >= 0 && (!best || at < best.at)) best = { at, input: field[1], label: field[2] };
  }
  return best;
}

const setTitle = () => { document.title = `${t("hall.title")} · ${t("app.title")}`; };
applyI18n();
setTitle();
signin.check();
bindLangToggle($("lang"));
onLangChange(setTitle);
onLangChange(() => {
  for (const entry of cards.values()) {
    showStatus(entry.el.querySelector(".conn"), feed.status, t);
    if (entry.state) entry.state.players = shownPlayers(entry.state.players_given);
    drawCard(entry);
  }
});
feed.start();
window.shotclockHall = feed; // for the tests (statusLog) and debugging
window.shotclockHallCards = cards;
refitOn(() => { for (const { el } of cards.values()) for (const n of el.querySelectorAll(".p .name")) fitText(n, { min: 12 }); });
