// /stats?table=ID: the table's current match for commentators, live. Figures from the
// server's match record (matchstats.js); pictures are the server's SVG charts as images,
// reloaded when the figures change. Query: table, lang.

import { TableConnection, tableFromQuery } from "./connection.js";
import { applyI18n, bindLangToggle, lang, onLangChange, t } from "./i18n.js";
import { MatchStats, seconds } from "./matchstats.js";
import { fitText, refitOn } from "./fit.js";

const $ = (id) => document.getElementById(id);
const table = tableFromQuery("1");
$("table-id").textContent = table;

let record = null;
let state = null;

const ROWS = [
  // [key, label, value(stats), timed]
  ["shots", "stats.shots", (s) => String(s.shots), false],
  ["mean_ms", "stats.mean", (s) => seconds(s.mean_ms), true],
  ["median_ms", "stats.median", (s) => seconds(s.median_ms), true],
  ["p90_ms", "stats.p90", (s) => seconds(s.p90_ms), true],
  ["max_ms", "stats.max", (s) => seconds(s.max_ms), true],
  ["over_20s", "stats.over20", (s) => share(s.over_20s, s.share_over_20s), true],
  ["over_30s", "stats.over30", (s) => share(s.over_30s, s.share_over_30s), true],
  ["time_fouls", "stats.time_fouls", (s) => String(s.time_fouls), true],
  ["fouls", "stats.fouls", (s) => String(s.fouls), false],
  ["extensions", "stats.extensions", (s) => String(s.extensions), true],
  ["whites", "stats.whites", (s) => String(s.whites), false],
  ["visits", "stats.visits", (s) => String(s.visits), false],
];

function share(count, fraction) {
  return count == null ? "—" : `${count} (${Math.round(fraction * 100)}%)`;
}

function cell(text, key, player, frameText) {
  const td = document.createElement("td");
  td.dataset.stat = key;
  td.dataset.player = String(player);
  td.textContent = text;
  if (frameText != null) {
    const small = document.createElement("small");
    small.textContent = frameText;
    small.title = t("stats.this_frame");
    td.append(small);
  }
  return td;
}

function draw() {
  if (!record) return;
  const current = record.frames[record.frames.length - 1] || null;
  for (const i of [0, 1]) {
    $(`name${i}`).textContent = record.players[i];
    $(`head${i}`).textContent = record.players[i];
  }
  $("score").textContent = `${record.score[0]} : ${record.score[1]}`;
  fitNames();
  $("match-id").textContent = record.id;
  $("frame").textContent = current ? String(current.number) : "–";
  $("protocol").href = `/report?match=${encodeURIComponent(record.id)}&lang=${lang}`;
  const body = $("figures").tBodies[0];
  body.replaceChildren();
  for (const [key, label, value, timed] of ROWS) {
    if (timed && !record.timer) continue; // 12.1: no time figures at all, not zeros
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = t(label);
    tr.append(th);
    for (const i of [0, 1]) {
      const frameStats = key === "mean_ms" && current ? current.players[i] : null;
      tr.append(cell(value(record.players_stats[i]), key, i,
        frameStats && frameStats.mean_ms != null
          ? `${t("stats.frame_short")} ${seconds(frameStats.mean_ms)}` : null));
    }
    body.append(tr);
  }
  $("no-timer").classList.toggle("hidden", record.timer);
  $("fig-distribution").classList.toggle("hidden", !record.timer);
  $("fig-shots").classList.toggle("hidden", !record.timer);
  const v = `v=${record.last_seq}&lang=${lang}`;
  const base = `/api/matches/${encodeURIComponent(record.id)}/charts`;
  const frame = current ? current.number : 1;
  $("cap-shots").textContent = t("stats.chart.shots", { frame });
  if (record.timer) {
    setSrc("distribution", `${base}/distribution.svg?${v}`);
    setSrc("shots", `${base}/shots.svg?frame=${frame}&${v}`);
  }
  setSrc("timeline", `${base}/timeline.svg?${v}`);
}

// The names in full on two lines at most, smaller where they must be (issue 23).
function fitNames() {
  for (const i of [0, 1]) fitText($(`name${i}`), { min: 14 });
}
refitOn(fitNames);

// Each chart is drawn by the server at its box's size (clamped to what the API accepts).
function setSrc(name, url) {
  const img = $(`chart-${name}`);
  const box = img.parentElement;
  const width = Math.max(400, Math.min(2400, Math.floor(box.clientWidth)));
  const height = Math.max(200, Math.min(1400, Math.floor(box.clientHeight)));
  const sized = `${url}&width=${width}&height=${height}`;
  if (img.getAttribute("src") !== sized) img.setAttribute("src", sized);
}

let resizeTimer = 0;
addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(draw, 250);
});

const stats = new MatchStats((r) => { record = r; draw(); });

const conn = new TableConnection(table, {
  onState: (s) => { state = s; stats.onState(s); },
  onEvent: (event, meta) => stats.onEvent(event, meta),
  onStatus: (status) => {
    const el = $("conn");
    el.dataset.status = status;
    el.textContent = t(`conn.${status}`);
  },
});

applyI18n();
bindLangToggle($("lang"));
onLangChange(draw);
window.shotclockStats = { conn, stats, get state() { return state; } }; // for the tests
conn.start();
