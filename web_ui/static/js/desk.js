// The director's desk (issue 36): an event run from one page, no curl. Sign in with the
// director's token (js/signin.js); tables made from a preset with a match time limit; the
// referees' tokens issued (each shown once, with a QR code of the console's link), listed
// and revoked; the draw imported (every bad line said in the page's language), its queues
// reordered, a match moved or started on any table (refused, with the match named, while
// one is in play, unless the director gives the reason); the results, where they are sent
// (the webhook) and its deliveries. Every request goes through the service's access table
// (clock_service/service/access.py); the page decides nothing the service does not.
//
// The tables come live from the hall's socket (js/hallfeed.js); the draw, tokens and
// results are read after each change, when their tab is opened, and every 10 s while it is
// shown (the draw also when a table's match starts or ends).

import { requestJson } from "./api.js";
import { showStatus } from "./connection.js";
import { HallFeed } from "./hallfeed.js";
import { importDraw, refusal } from "./hall_draw.js";
import { addStrings, applyI18n, bindLangToggle, errorText, lang, onLangChange, t } from "./i18n.js";
import { qrSvg } from "./qr.js";
import { ClockPhase } from "./phases.js";
import { mountSignIn } from "./signin.js";
import { drawMatchClock, wireFilePick } from "./tournament.js";

addStrings({
  en: {
    "desk.locked": "Sign in to direct the event",
    "preset.section-12": "Section 12 of the rules (35 s, then less each round; default)",
    "preset.wpa-20": "WPA §20 (35 s, one 25 s extension)",
    "preset.mosconi": "Mosconi-style (30 s, one 30 s extension)",
    "preset.deciding-frame-2-extensions": "Two extensions in the deciding frame",
    "desk.locked_help": "The desk creates tables, issues the referees' tokens, imports the draw, starts the matches and follows the results. It needs the director's token.",
    "desk.tab.tables": "Tables",
    "desk.tab.draw": "Draw",
    "desk.tab.referees": "Referees",
    "desk.tab.results": "Results",
    "desk.new_tables": "New tables",
    "desk.table_ids": "Table ids (7, or 1-8 for several)",
    "desk.preset": "Time rules",
    "desk.race_to": "Race to (frames to win; empty: open-ended)",
    "desk.match_limit": "Match time limit (minutes; empty: none)",
    "desk.at_limit": "At the limit",
    "desk.event": "Event",
    "desk.players_hint": "Leave the players empty when the draw brings them: its first match then starts with one press.",
    "desk.timer": "Shot clock (12.1: off = no time control)",
    "desk.create": "Create",
    "desk.created": "Created: table {ids}",
    "desk.bad_ids": "Table ids: one id (letters, digits, - or _), or a range such as 1-8 (at most 50).",
    "desk.player_n": "Player {n}",
    "desk.create_failed": "Table {id}: {why}",
    "desk.draw_hint": "Columns: number, player1, player2, race_to, event, round, table (a table id, or “next” for the next free table).",
    "desk.next_free": "Next free table",
    "desk.queue_empty": "nothing queued",
    "desk.playing_now": "Playing: {line}",
    "desk.up": "Up",
    "desk.down": "Down",
    "desk.up_label": "Match {n} up",
    "desk.down_label": "Match {n} down",
    "desk.move_to": "Table for match {n}",
    "desk.move": "Move",
    "desk.start_on": "Start",
    "desk.start_label": "Start match {n} on the table chosen",
    "desk.pick_table": "choose a table",
    "desk.started": "Match {n} started on table {table}",
    "desk.start_next": "Start: {line}",
    "desk.no_next": "Nothing queued for this table",
    "desk.next_is": "Next from the draw: {line}",
    "desk.reason": "Reason for leaving it unfinished",
    "desk.force": "Leave it unfinished and start",
    "desk.keep": "Keep playing",
    "desk.in_play": "Table {table} is playing {a} – {b} ({score}): start the next match when it is over, or give the reason for leaving it unfinished.",
    "desk.in_play_timed": "Table {table} is playing {a} – {b} ({score}) and a shot is being timed: start another match when this one is over.",
    "desk.reason_needed": "Give the reason first.",
    "desk.referee_token": "Referee token…",
    "desk.referee_of": "Table {table} referee",
    "desk.issue": "Issue a token",
    "desk.token_name": "Who holds it (as the log records it)",
    "desk.role": "Role",
    "desk.role.referee": "Referee of the tables ticked",
    "desk.role.director": "Director (every table)",
    "desk.token_tables": "Tables",
    "desk.issue_button": "Issue",
    "desk.pick_tables": "Tick the referee's tables.",
    "desk.issued_title": "Token for {name}",
    "desk.once": "Shown once: the service keeps only its fingerprint. Give it now, or issue another.",
    "desk.scan": "Scan with the referee's phone: it opens the console, signed in.",
    "desk.scan_director": "A director's token: sign in with it on the desk or the hall.",
    "desk.qr_label": "QR code of the console link for table {table}",
    "desk.link": "Console link",
    "desk.link_desk": "Desk link",
    "desk.token": "Token",
    "desk.loopback": "This page is open at {host}: a phone cannot open that address. Open the desk at the service's network address (e.g. http://192.168.1.10:8000/desk) before issuing tokens for phones.",
    "desk.copy": "Copy the link",
    "desk.copied": "Copied",
    "desk.done": "Done",
    "desk.tokens": "Tokens issued",
    "desk.no_tokens": "No token issued yet.",
    "desk.col.name": "Holder",
    "desk.col.role": "Role",
    "desk.col.tables": "Tables",
    "desk.col.issued": "Issued",
    "desk.col.status": "Status",
    "desk.col.action": "Action",
    "desk.all_tables": "all",
    "desk.live": "valid",
    "desk.revoked_at": "revoked {time}",
    "desk.revoke": "Revoke",
    "desk.revoke_label": "Revoke the token of {name}",
    "desk.revoke_sure": "Sure? Revoke",
    "desk.role_referee": "referee",
    "desk.role_director": "director",
    "desk.results": "Results",
    "desk.no_results": "No match finished yet.",
    "desk.results_csv": "All results as CSV",
    "desk.col.match": "Match",
    "desk.col.draw": "Draw no.",
    "desk.col.event": "Event",
    "desk.col.players": "Players",
    "desk.col.score": "Score",
    "desk.col.winner": "Winner",
    "desk.col.ended": "Ended",
    "desk.col.protocol": "Protocol",
    "desk.drawn": "draw",
    "desk.protocol": "protocol {id}",
    "desk.webhook": "Send results to (webhook)",
    "desk.webhook_url": "Address (http:// or https://; empty: send none)",
    "desk.webhook_secret": "Secret (signs each result; empty: keep the one set)",
    "desk.webhook_none": "Results are not sent anywhere.",
    "desk.webhook_store": "Set here: {url}{signed}.",
    "desk.webhook_env": "Set on the service (SHOTCLOCK_RESULTS_WEBHOOK): {url}{signed}. It cannot be changed here.",
    "desk.signed": ", signed",
    "desk.save": "Save",
    "desk.saved": "Saved",
    "desk.outbox": "Deliveries",
    "desk.no_deliveries": "Nothing sent yet.",
    "desk.col.attempts": "Attempts",
    "desk.col.delivery": "Delivered / next try",
    "desk.col.error": "Last error",
    "desk.sent_at": "delivered {time}",
    "desk.next_at": "next try {time}",
  },
  ru: {
    "desk.locked": "Войдите, чтобы вести турнир",
    "preset.section-12": "Раздел 12 правил (35 с, затем меньше с каждым кругом; по умолчанию)",
    "preset.wpa-20": "WPA §20 (35 с, одно продление 25 с)",
    "preset.mosconi": "Как в Кубке Москони (30 с, одно продление 30 с)",
    "preset.deciding-frame-2-extensions": "Два продления в решающей партии",
    "desk.locked_help": "На пульте создаются столы, выдаются токены судей, загружается сетка, начинаются матчи и видны результаты. Нужен токен главного судьи.",
    "desk.tab.tables": "Столы",
    "desk.tab.draw": "Сетка",
    "desk.tab.referees": "Судьи",
    "desk.tab.results": "Результаты",
    "desk.new_tables": "Новые столы",
    "desk.table_ids": "Номера столов (7 или 1-8 для нескольких)",
    "desk.preset": "Регламент времени",
    "desk.race_to": "Матч до побед (партий; пусто — без ограничения)",
    "desk.match_limit": "Лимит времени матча (минуты; пусто — нет)",
    "desk.at_limit": "По истечении лимита",
    "desk.event": "Турнир",
    "desk.players_hint": "Оставьте игроков пустыми, если их даст сетка: её первый матч тогда начинается одним нажатием.",
    "desk.timer": "Контроль времени на удар (12.1: выкл. — без контроля)",
    "desk.create": "Создать",
    "desk.created": "Создано: стол {ids}",
    "desk.bad_ids": "Номера столов: один номер (латинские буквы, цифры, - или _) или диапазон вроде 1-8 (не больше 50).",
    "desk.player_n": "Игрок {n}",
    "desk.create_failed": "Стол {id}: {why}",
    "desk.draw_hint": "Столбцы: number, player1, player2, race_to, event, round, table (номер стола или «next» — первый свободный стол).",
    "desk.next_free": "Первый свободный стол",
    "desk.queue_empty": "матчей в очереди нет",
    "desk.playing_now": "Идёт: {line}",
    "desk.up": "Выше",
    "desk.down": "Ниже",
    "desk.up_label": "Матч {n} выше",
    "desk.down_label": "Матч {n} ниже",
    "desk.move_to": "Стол для матча {n}",
    "desk.move": "Перенести",
    "desk.start_on": "Начать",
    "desk.start_label": "Начать матч {n} на выбранном столе",
    "desk.pick_table": "выберите стол",
    "desk.started": "Матч {n} начат на столе {table}",
    "desk.start_next": "Начать: {line}",
    "desk.no_next": "Для этого стола в сетке ничего нет",
    "desk.next_is": "Далее по сетке: {line}",
    "desk.reason": "Причина, по которой матч не доигран",
    "desk.force": "Не доигрывать и начать",
    "desk.keep": "Пусть доиграют",
    "desk.in_play": "На столе {table} идёт матч {a} – {b} ({score}): начните следующий, когда он закончится, или укажите причину, по которой он не доигран.",
    "desk.in_play_timed": "На столе {table} идёт матч {a} – {b} ({score}), время удара идёт: начните другой матч, когда этот закончится.",
    "desk.reason_needed": "Сначала укажите причину.",
    "desk.referee_token": "Токен судьи…",
    "desk.referee_of": "Судья стола {table}",
    "desk.issue": "Выдать токен",
    "desk.token_name": "Кому (так его запишет журнал)",
    "desk.role": "Роль",
    "desk.role.referee": "Судья отмеченных столов",
    "desk.role.director": "Главный судья (все столы)",
    "desk.token_tables": "Столы",
    "desk.issue_button": "Выдать",
    "desk.pick_tables": "Отметьте столы судьи.",
    "desk.issued_title": "Токен: {name}",
    "desk.once": "Показывается один раз: сервис хранит только его отпечаток. Передайте его сейчас или выдайте новый.",
    "desk.scan": "Отсканируйте телефоном судьи: откроется пульт судьи, уже с токеном.",
    "desk.scan_director": "Токен главного судьи: войдите с ним на пульте или в зале.",
    "desk.qr_label": "QR-код ссылки на пульт судьи стола {table}",
    "desk.link": "Ссылка на пульт судьи",
    "desk.link_desk": "Ссылка на пульт главного судьи",
    "desk.token": "Токен",
    "desk.loopback": "Эта страница открыта по адресу {host}: телефон по нему не откроет. Откройте пульт по сетевому адресу сервиса (например, http://192.168.1.10:8000/desk), прежде чем выдавать токены для телефонов.",
    "desk.copy": "Скопировать ссылку",
    "desk.copied": "Скопировано",
    "desk.done": "Готово",
    "desk.tokens": "Выданные токены",
    "desk.no_tokens": "Токенов ещё не выдано.",
    "desk.col.name": "Кому",
    "desk.col.role": "Роль",
    "desk.col.tables": "Столы",
    "desk.col.issued": "Выдан",
    "desk.col.status": "Состояние",
    "desk.col.action": "Действие",
    "desk.all_tables": "все",
    "desk.live": "действует",
    "desk.revoked_at": "отозван {time}",
    "desk.revoke": "Отозвать",
    "desk.revoke_label": "Отозвать токен: {name}",
    "desk.revoke_sure": "Точно отозвать?",
    "desk.role_referee": "судья",
    "desk.role_director": "главный судья",
    "desk.results": "Результаты",
    "desk.no_results": "Ни один матч ещё не закончен.",
    "desk.results_csv": "Все результаты в CSV",
    "desk.col.match": "Матч",
    "desk.col.draw": "№ в сетке",
    "desk.col.event": "Турнир",
    "desk.col.players": "Игроки",
    "desk.col.score": "Счёт",
    "desk.col.winner": "Победитель",
    "desk.col.ended": "Окончен",
    "desk.col.protocol": "Протокол",
    "desk.drawn": "ничья",
    "desk.protocol": "протокол {id}",
    "desk.webhook": "Отправлять результаты (webhook)",
    "desk.webhook_url": "Адрес (http:// или https://; пусто — не отправлять)",
    "desk.webhook_secret": "Секрет (подпись каждого результата; пусто — оставить прежний)",
    "desk.webhook_none": "Результаты никуда не отправляются.",
    "desk.webhook_store": "Задан здесь: {url}{signed}.",
    "desk.webhook_env": "Задан на сервисе (SHOTCLOCK_RESULTS_WEBHOOK): {url}{signed}. Здесь его не изменить.",
    "desk.signed": ", с подписью",
    "desk.save": "Сохранить",
    "desk.saved": "Сохранено",
    "desk.outbox": "Отправка",
    "desk.no_deliveries": "Ещё ничего не отправлено.",
    "desk.col.attempts": "Попыток",
    "desk.col.delivery": "Доставлен / следующая попытка",
    "desk.col.error": "Последняя ошибка",
    "desk.sent_at": "доставлен {time}",
    "desk.next_at": "следующая попытка {time}",
  },
});

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 10000;
const PENDING_MS = 2000;
const TABLE_ID = /^[A-Za-z0-9_-]{1,32}$/;
const AT_LIMIT = ["leader_wins", "frame_decides", "tie_break_frame", "shot_clock"];

const tables = new Map(); // id -> {el, state}
let draw = null; // GET /api/draw
let presets = [];
let directing = false;
let tab = "tables";
let refreshTimer = 0;
let pending = false; // a delivery not yet taken by the webhook

const time = (ms) => (ms == null ? "–" : new Date(ms).toLocaleTimeString(lang === "ru" ? "ru-RU" : "en-GB",
  { hour: "2-digit", minute: "2-digit" }));
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c != null));
  return node;
};
const say = (out, ok, lines) => {
  out.className = `result ${ok ? "ok" : "error"}`;
  out.replaceChildren(...[].concat(lines).map((line) => el("div", {}, line)));
};
const matchLine = (m) => `${m.players[0]} – ${m.players[1]}, ${t("label.race_to", { n: m.race_to })}`;

// -- signing in ------------------------------------------------------------------------------
const signin = mountSignIn({
  who: $("who"), button: $("signin"), out: $("signout"),
  onChange: (who) => {
    directing = who.role === "director" || who.role === "open";
    $("locked").classList.toggle("hidden", directing);
    $("desk").classList.toggle("hidden", !directing);
    if (directing) { loadPresets(); showTab(tab); }
  },
});
$("locked-signin").addEventListener("click", () => signin.open());

/** Any refusal for want of the director (a revoked token, a service restarted with
 * another): back to the sign-in, saying why. */
function checkAuth(result) {
  if (result.status === 401 || result.status === 403) signin.check();
}

// -- tabs --------------------------------------------------------------------------------------
function showTab(name) {
  tab = name;
  try { sessionStorage.setItem("shotclock.desk.tab", name); } catch { /* private mode */ }
  for (const button of document.querySelectorAll('[role="tab"]')) {
    const on = button.dataset.tab === name;
    button.setAttribute("aria-selected", String(on));
    button.tabIndex = on ? 0 : -1;
    $(button.getAttribute("aria-controls")).classList.toggle("hidden", !on);
  }
  refresh();
}

for (const button of document.querySelectorAll('[role="tab"]')) {
  button.addEventListener("click", () => showTab(button.dataset.tab));
  button.addEventListener("keydown", (ev) => { // arrows move along the tabs (ARIA tabs)
    const all = [...document.querySelectorAll('[role="tab"]')];
    const step = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
    if (!step) return;
    const next = all[(all.indexOf(button) + step + all.length) % all.length];
    next.focus();
    showTab(next.dataset.tab);
  });
}
try { tab = sessionStorage.getItem("shotclock.desk.tab") || "tables"; } catch { /* private mode */ }

/** What the shown tab reads, now and every REFRESH_MS while it is shown. */
async function refresh() {
  clearTimeout(refreshTimer);
  if (!directing) return;
  if (tab === "tables" || tab === "draw") await loadDraw();
  if (tab === "referees") await loadTokens();
  if (tab === "results") await loadResults();
  // A result on its way to the webhook: looked at again soon, to show it taken (or failing).
  refreshTimer = setTimeout(refresh, tab === "results" && pending ? PENDING_MS : REFRESH_MS);
}

// -- the tables (live from the hall's socket) --------------------------------------------------
const feed = new HallFeed({
  onStatus: (status) => showStatus($("conn"), status, t),
  onHall: (states) => {
    const live = new Set(states.map((s) => s.table));
    for (const id of [...tables.keys()]) if (!live.has(id)) removeTable(id);
    for (const s of states) setTable(s);
    drawTablesEmpty();
  },
  onTable: (s) => setTable(s),
  onRemoved: (id) => removeTable(id),
});

function setTable(state) {
  let entry = tables.get(state.table);
  if (!entry) {
    const node = $("table-row").content.firstElementChild.cloneNode(true);
    node.dataset.table = state.table;
    node.querySelector(".id").textContent = state.table;
    node.querySelector(".console").href = `/referee?table=${encodeURIComponent(state.table)}`;
    applyI18n(node);
    entry = { el: node, state: null };
    wireTable(entry);
    tables.set(state.table, entry);
    const ids = [...tables.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const after = tables.get(ids[ids.indexOf(state.table) + 1]);
    $("tables").insertBefore(node, after && after.el !== node ? after.el : null);
    drawTablesEmpty();
    drawTokenTables();
  }
  if (entry.state && typeof state.seq === "number" && state.seq < entry.state.seq) return;
  const before = entry.state;
  entry.state = state;
  drawTable(entry);
  // A match started or ended somewhere: what the draw has next changed with it.
  const key = (s) => s && s.match ? `${s.match.id}:${s.match.over}` : "";
  if (before && key(before) !== key(state)) {
    loadDraw();
    if (tab === "results") refresh();
  }
}

function removeTable(id) {
  const entry = tables.get(id);
  if (!entry) return;
  entry.el.remove();
  tables.delete(id);
  drawTablesEmpty();
  drawTokenTables();
}

function drawTablesEmpty() {
  $("no-tables").classList.toggle("hidden", tables.size > 0);
}

function phaseOf(state) {
  const m = state.match || {};
  if (state.phase === ClockPhase.FRAME_OVER && m.over) return "match_over";
  return state.timer === false && state.phase !== ClockPhase.FRAME_OVER ? "off" : state.phase;
}

function notBegun(state) {
  return state.frame === 1 && state.phase === ClockPhase.READY && !state.can_undo
    && !(state.frames_won || [0, 0]).some(Boolean) && !(state.fouls || [0, 0]).some(Boolean);
}

function drawTable(entry) {
  const { el: node, state } = entry;
  if (!state) return;
  const m = state.match || { score: [0, 0] };
  const phase = phaseOf(state);
  node.dataset.look = phase === "match_over" ? "over" : state.phase === ClockPhase.RUNNING ? "running" : "idle";
  node.querySelector(".phase").textContent = t(`phase.${phase}`);
  node.querySelector(".players").textContent = `${state.players[0]} – ${state.players[1]}`;
  node.querySelector(".score").textContent = `${m.score[0]} : ${m.score[1]}`;
  node.querySelector(".race").textContent = m.race_to ? t("label.race_to", { n: m.race_to }) : "";
  drawMatchClock(node.querySelector(".match-clock"), state, feed.serverNow());
  const queue = draw && draw.tables[state.table];
  const next = queue ? queue.next : null;
  node.querySelector(".next").textContent = next ? t("desk.next_is", { line: `${next.number}. ${matchLine(next)}` }) : t("desk.no_next");
  // The next match is offered when the table is free: its match over, or one that is not a
  // draw match and not begun (a table made before its players were known). Over a match in
  // play the draw tab's Start is the way (the service then asks the reason).
  const free = Boolean(m.over) || (notBegun(state) && !(queue && queue.playing));
  const start = node.querySelector(".start");
  start.textContent = next ? t("desk.start_next", { line: `${next.players[0]} – ${next.players[1]}` }) : "";
  start.classList.toggle("hidden", !next || !free);
  start.dataset.number = next ? String(next.number) : "";
}

function wireTable(entry) {
  const node = entry.el;
  const refused = node.querySelector(".refusal");
  const table = () => entry.state.table;
  node.querySelector(".start").addEventListener("click", () => startOn(table(), null, node));
  node.querySelector(".force").addEventListener("click", () => {
    const reason = node.querySelector(".reason").value.trim();
    if (!reason) { node.querySelector(".why").textContent = t("desk.reason_needed"); return; }
    startOn(table(), refused.dataset.number ? Number(refused.dataset.number) : null, node, reason);
  });
  node.querySelector(".keep").addEventListener("click", () => refused.classList.add("hidden"));
  node.querySelector(".token").addEventListener("click", () => prepareToken(table()));
}

/** Start ``number`` (null: the table's next) on ``table``; a match in play there is said
 * on the table's card, with the reason to give to leave it unfinished. */
async function startOn(table, number, card, reason = null) {
  const body = reason ? { reason } : {};
  const result = number == null
    ? await requestJson("POST", `/api/tables/${encodeURIComponent(table)}/next`, body)
    : await requestJson("POST", `/api/draw/${number}/start`, { table, ...body });
  checkAuth(result);
  const entry = tables.get(table);
  const target = card || (entry && entry.el);
  if (result.ok) {
    if (target) {
      target.querySelector(".refusal").classList.add("hidden");
      target.querySelector(".reason").value = "";
    }
    if (entry) setTable(result.body);
    loadDraw();
    return true;
  }
  const error = (result.body && result.body.error) || {};
  // A match in play there: said on the table's card with the match and its score; the
  // director may leave it unfinished with a reason (not while a shot is being timed).
  const inPlay = error.code === "match_in_play" || error.code === "clock_counting";
  if (inPlay && entry && entry.el) {
    const s = entry.state;
    const m = s.match || { score: [0, 0] };
    const refused = entry.el.querySelector(".refusal");
    refused.dataset.number = number == null ? "" : String(number);
    refused.dataset.code = error.code;
    const vars = { table, a: s.players[0], b: s.players[1], score: `${m.score[0]}:${m.score[1]}` };
    entry.el.querySelector(".why").textContent = t(error.code === "match_in_play" ? "desk.in_play" : "desk.in_play_timed", vars);
    refused.classList.remove("hidden");
    if (tab !== "tables") showTab("tables");
    if (error.code === "match_in_play") entry.el.querySelector(".reason").focus();
    return false;
  }
  if (target) {
    const refused = target.querySelector(".refusal");
    refused.dataset.number = "";
    refused.dataset.code = error.code || "";
    target.querySelector(".why").textContent = refusal(result);
    refused.classList.remove("hidden");
  }
  return false;
}

// -- new tables ------------------------------------------------------------------------------
async function loadPresets() {
  if (presets.length) return;
  const result = await requestJson("GET", "/api/presets");
  if (!result.ok) return;
  presets = result.body;
  drawPresets();
}

function drawPresets() {
  const select = $("new-tables").elements.preset;
  const chosen = select.value || "section-12";
  // A built-in preset in the page's words; a federation's own (SHOTCLOCK_PRESETS_DIR) by its title.
  const title = (p) => (p.builtin && t(`preset.${p.name}`) !== `preset.${p.name}` ? t(`preset.${p.name}`) : p.title);
  select.replaceChildren(...presets.map((p) => el("option", { value: p.name, title: p.source }, title(p))));
  if (presets.some((p) => p.name === chosen)) select.value = chosen;
  const at = $("new-tables").elements.at_limit;
  const atChosen = at.value || AT_LIMIT[0];
  at.replaceChildren(...AT_LIMIT.map((code) => el("option", { value: code }, t(`atlimit.${code}`))));
  at.value = atChosen;
}

/** "7" -> ["7"]; "1-8" -> ["1" ... "8"]; "A1-A4" -> ["A1" ... "A4"]; null when not ids. */
function tableIds(text) {
  const value = text.trim();
  const range = /^([A-Za-z_-]*?)(\d+)\s*[-–]\s*\1?(\d+)$/.exec(value);
  if (range) {
    const [, prefix, from, to] = range;
    const a = Number(from);
    const b = Number(to);
    if (b < a || b - a >= 50) return null;
    const ids = Array.from({ length: b - a + 1 }, (_, i) => `${prefix}${a + i}`);
    return ids.every((id) => TABLE_ID.test(id)) ? ids : null;
  }
  return TABLE_ID.test(value) ? [value] : null;
}

$("new-tables").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  const out = $("new-tables-result");
  const ids = tableIds(f.ids.value);
  if (!ids) { say(out, false, t("desk.bad_ids")); f.ids.focus(); return; }
  const made = [];
  const failed = [];
  for (const id of ids) {
    const body = {
      id,
      players: [f.a.value.trim() || t("desk.player_n", { n: 1 }), f.b.value.trim() || t("desk.player_n", { n: 2 })],
      timer: f.timer.checked,
      profile: { preset: f.preset.value || "section-12" },
      race_to: f.race_to.value ? Number(f.race_to.value) : null,
    };
    if (f.limit_min.value) {
      body.match_limit_ms = Math.round(Number(f.limit_min.value) * 60000);
      body.at_match_limit = f.at_limit.value;
    }
    if (f.event.value.trim()) body.event = f.event.value.trim();
    const result = await requestJson("POST", "/api/tables", body);
    checkAuth(result);
    if (result.ok) {
      made.push(id);
      setTable(result.body);
    } else {
      failed.push(t("desk.create_failed", { id, why: refusal(result) }));
    }
  }
  const lines = [...(made.length ? [t("desk.created", { ids: made.join(", ") })] : []), ...failed];
  say(out, failed.length === 0, lines);
  if (made.length) loadDraw();
});

// -- the draw ------------------------------------------------------------------------------------
async function loadDraw() {
  const result = await requestJson("GET", "/api/draw");
  if (!result.ok) return;
  draw = result.body;
  for (const entry of tables.values()) drawTable(entry);
  drawQueues();
}

function drawQueues() {
  if (!draw) return;
  const ids = Object.keys(draw.tables).sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const boxes = ids.map((id) => queueBox(id, t("draw.queue", { table: id }), draw.tables[id].queue, draw.tables[id].playing));
  boxes.push(queueBox("", t("desk.next_free"), draw.unassigned, null));
  // Keep the focus where it was across a redraw (a reorder keeps the moved match's button).
  const focused = document.activeElement && document.activeElement.closest(".qitem");
  const focusKey = focused ? [focused.dataset.number, document.activeElement.dataset.act] : null;
  $("queues").replaceChildren(...boxes);
  if (focusKey) {
    const again = $("queues").querySelector(`.qitem[data-number="${focusKey[0]}"] [data-act="${focusKey[1]}"]`);
    if (again && !again.disabled) again.focus();
  }
}

function queueBox(table, title, queue, playing) {
  const box = el("section", { className: "box queue", dataset: { table } });
  const headingId = `queue-${table || "free"}`;
  box.setAttribute("aria-labelledby", headingId);
  box.append(el("h3", { id: headingId }, title));
  if (playing) box.append(el("p", { className: "playing" }, t("desk.playing_now", { line: `${playing.number}. ${matchLine(playing)}` })));
  if (!queue.length) {
    box.append(el("p", { className: "muted" }, t("desk.queue_empty")));
    return box;
  }
  // No list markers: a match shows its draw number, which is not its place in the queue.
  const list = el("ul", { className: "qlist" });
  queue.forEach((m, i) => list.append(queueItem(m, table, i, queue.length)));
  box.append(list);
  return box;
}

function queueItem(m, table, i, count) {
  const where = [m.event, m.round].filter(Boolean).join(", ");
  const li = el("li", { className: "qitem", dataset: { number: String(m.number) } });
  li.append(el("span", { className: "qtext" },
    el("b", {}, `${m.number}.`), ` ${m.players[0]} – ${m.players[1]} · ${t("label.race_to", { n: m.race_to })}${where ? ` · ${where}` : ""}`));
  const up = el("button", { type: "button", className: "icon", disabled: i === 0, title: t("desk.up"), dataset: { act: "up" } }, "▲");
  up.setAttribute("aria-label", t("desk.up_label", { n: m.number }));
  const down = el("button", { type: "button", className: "icon", disabled: i === count - 1, title: t("desk.down"), dataset: { act: "down" } }, "▼");
  down.setAttribute("aria-label", t("desk.down_label", { n: m.number }));
  up.addEventListener("click", () => assign(m.number, table || null, i - 1));
  down.addEventListener("click", () => assign(m.number, table || null, i + 1));
  const pick = el("select", { dataset: { act: "table" } });
  pick.setAttribute("aria-label", t("desk.move_to", { n: m.number }));
  pick.append(el("option", { value: "" }, t("desk.next_free")),
    ...Object.keys(draw.tables).sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
      .map((id) => el("option", { value: id }, t("draw.queue", { table: id }))));
  pick.value = table;
  const move = el("button", { type: "button", dataset: { act: "move" } }, t("desk.move"));
  move.addEventListener("click", () => assign(m.number, pick.value || null, null));
  const start = el("button", { type: "button", className: "primary", dataset: { act: "start" } }, t("desk.start_on"));
  start.setAttribute("aria-label", t("desk.start_label", { n: m.number }));
  start.addEventListener("click", async () => {
    if (!pick.value) { say($("draw-result"), false, t("desk.pick_table")); pick.focus(); return; }
    if (await startOn(pick.value, m.number, null)) {
      say($("draw-result"), true, t("desk.started", { n: m.number, table: pick.value }));
    }
  });
  li.append(el("span", { className: "qactions" }, up, down, pick, move, start));
  return li;
}

async function assign(number, table, position) {
  const result = await requestJson("POST", `/api/draw/${number}/assign`,
    position == null ? { table } : { table, position });
  checkAuth(result);
  if (!result.ok) say($("draw-result"), false, refusal(result));
  await loadDraw();
}

wireFilePick($("draw-import").querySelector(".file-pick"));
$("draw-import").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const file = ev.target.elements.file.files[0];
  if (!file) { say($("draw-result"), false, t("file.none")); ev.target.elements.file.focus(); return; }
  const result = await importDraw(file);
  checkAuth(result);
  say($("draw-result"), result.ok, result.lines);
  await loadDraw();
});

// -- referees' tokens ------------------------------------------------------------------------
function drawTokenTables() {
  const box = $("issue-tables");
  const ticked = new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
  const ids = [...tables.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  box.replaceChildren(el("legend", {}, t("desk.token_tables")), ...ids.map((id) => {
    const input = el("input", { type: "checkbox", name: "tables", value: id, checked: ticked.has(id) });
    return el("label", { className: "check" }, input, ` ${t("draw.queue", { table: id })}`);
  }));
}

function prepareToken(table) {
  const form = $("issue");
  form.elements.role.value = "referee";
  $("issue-tables").disabled = false;
  for (const box of form.querySelectorAll('input[name="tables"]')) box.checked = box.value === table;
  form.elements.name.value = t("desk.referee_of", { table });
  showTab("referees");
  form.elements.name.focus();
  form.elements.name.select();
}

$("issue").elements.role.addEventListener("change", (ev) => {
  $("issue-tables").disabled = ev.target.value === "director";
});

$("issue").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  const out = $("issue-result");
  const role = f.role.value;
  const picked = [...ev.target.querySelectorAll('input[name="tables"]:checked')].map((i) => i.value);
  if (role === "referee" && !picked.length) { say(out, false, t("desk.pick_tables")); return; }
  const body = { role, name: f.name.value.trim(), ...(role === "referee" ? { tables: picked } : {}) };
  const result = await requestJson("POST", "/api/tokens", body);
  checkAuth(result);
  if (!result.ok) { say(out, false, refusal(result)); return; }
  out.replaceChildren();
  f.name.value = ""; // the next token is someone else's
  showIssued(result.body);
  loadTokens();
});

/** The new token, once: its console link (the token after ``#``: never sent to a server,
 * js/api.js takeTokenFromLink) as a QR code, the link and the token. */
let lastIssued = null;
function showIssued(issued, { focus = true } = {}) {
  lastIssued = issued;
  const box = $("issued");
  const table = issued.tables && issued.tables[0];
  const link = table
    ? `${location.origin}/referee?table=${encodeURIComponent(table)}#token=${encodeURIComponent(issued.token)}`
    : `${location.origin}/desk`;
  $("issued-title").textContent = t("desk.issued_title", { name: issued.name });
  box.querySelector("[data-i18n='desk.scan']").textContent = t(table ? "desk.scan" : "desk.scan_director");
  box.querySelector("[data-i18n='desk.link']").textContent = t(table ? "desk.link" : "desk.link_desk");
  $("issued-link").value = link;
  $("issued-token").value = issued.token;
  const qr = $("issued-qr");
  qr.replaceChildren(table ? qrSvg(link, t("desk.qr_label", { table })) : "");
  qr.classList.toggle("hidden", !table);
  qr.dataset.link = table ? link : "";
  const host = location.hostname;
  const loopback = host === "localhost" || host === "[::1]" || host.startsWith("127.");
  $("issued-loopback").textContent = t("desk.loopback", { host });
  $("issued-loopback").classList.toggle("hidden", !loopback || !table);
  box.classList.remove("hidden");
  if (!focus) return;
  box.scrollIntoView({ block: "nearest" });
  $("issued-done").focus();
}

$("issued-done").addEventListener("click", () => {
  // Gone from the page too: shown once.
  lastIssued = null;
  $("issued").classList.add("hidden");
  $("issued-qr").replaceChildren();
  $("issued-link").value = "";
  $("issued-token").value = "";
});

$("issued-copy").addEventListener("click", async () => {
  const input = $("issued-link");
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    input.select(); // no clipboard over plain http on another host: selected to copy by hand
    return;
  }
  $("issued-copy").textContent = t("desk.copied");
  setTimeout(() => { $("issued-copy").textContent = t("desk.copy"); }, 2000);
});

async function loadTokens() {
  const result = await requestJson("GET", "/api/tokens");
  checkAuth(result);
  if (!result.ok) return;
  const rows = result.body.slice().reverse(); // the newest first
  $("no-tokens").classList.toggle("hidden", rows.length > 0);
  $("tokens").querySelector("tbody").replaceChildren(...rows.map((tok) => {
    const revoke = el("button", { type: "button", className: "danger", hidden: tok.revoked_at != null }, t("desk.revoke"));
    revoke.setAttribute("aria-label", t("desk.revoke_label", { name: tok.name }));
    let armed = 0;
    revoke.addEventListener("click", async () => {
      if (!armed) { // two presses: the first one asks
        revoke.textContent = t("desk.revoke_sure");
        armed = setTimeout(() => { armed = 0; revoke.textContent = t("desk.revoke"); }, 5000);
        return;
      }
      clearTimeout(armed);
      const answer = await requestJson("DELETE", `/api/tokens/${tok.id}`);
      checkAuth(answer);
      loadTokens();
    });
    return el("tr", { dataset: { id: tok.id, status: tok.revoked_at == null ? "live" : "revoked" } },
      el("td", {}, tok.name),
      el("td", {}, t(tok.role === "director" ? "desk.role_director" : "desk.role_referee")),
      el("td", {}, tok.tables ? tok.tables.join(", ") : t("desk.all_tables")),
      el("td", {}, time(tok.created_at)),
      el("td", {}, tok.revoked_at == null ? t("desk.live") : t("desk.revoked_at", { time: time(tok.revoked_at) })),
      el("td", {}, revoke));
  }));
}

// -- results -------------------------------------------------------------------------------------
async function loadResults() {
  const [results, outbox, hook] = await Promise.all([
    requestJson("GET", "/api/results"), requestJson("GET", "/api/results/outbox"),
    requestJson("GET", "/api/results/webhook")]);
  checkAuth(outbox);
  if (results.ok) {
    const rows = results.body.results.slice().reverse(); // the latest first
    $("no-results").classList.toggle("hidden", rows.length > 0);
    $("results").querySelector("tbody").replaceChildren(...rows.map((r) => el("tr", { dataset: { match: r.match } },
      el("td", {}, r.draw_number == null ? "–" : String(r.draw_number)),
      el("td", {}, r.table),
      el("td", {}, r.event || ""),
      el("td", {}, `${r.players[0]} – ${r.players[1]}`),
      el("td", { className: "digits" }, `${r.score[0]} : ${r.score[1]}`),
      el("td", {}, r.drawn ? t("desk.drawn") : r.winner_name || "–"),
      el("td", {}, time(r.ended_at)),
      el("td", {}, el("a", { href: `/report?match=${encodeURIComponent(r.match)}&lang=${lang}` }, t("desk.protocol", { id: r.match }))))));
  }
  if (outbox.ok) {
    const rows = outbox.body.deliveries;
    pending = outbox.body.webhook && rows.some((d) => d.sent_at == null);
    $("no-deliveries").classList.toggle("hidden", rows.length > 0);
    $("outbox").querySelector("tbody").replaceChildren(...rows.map((d) => el("tr", { dataset: { match: d.match, sent: String(d.sent_at != null) } },
      el("td", {}, d.match), el("td", { className: "digits" }, String(d.attempts)),
      el("td", {}, d.sent_at != null ? t("desk.sent_at", { time: time(d.sent_at) }) : t("desk.next_at", { time: time(d.next_at) })),
      el("td", {}, d.last_error || ""))));
  }
  if (hook.ok) drawWebhook(hook.body);
}

let webhook = null;
function drawWebhook(config) {
  webhook = config;
  const f = $("webhook").elements;
  const fromEnv = config.source === "environment";
  const signed = config.secret_set ? t("desk.signed") : "";
  $("webhook-source").textContent = !config.url ? t("desk.webhook_none")
    : t(fromEnv ? "desk.webhook_env" : "desk.webhook_store", { url: config.url, signed });
  if (document.activeElement !== f.url) f.url.value = config.url || "";
  for (const input of [f.url, f.secret, $("webhook").querySelector("button")]) input.disabled = fromEnv;
}

$("webhook").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  const body = { url: f.url.value.trim() || null };
  if (f.secret.value) body.secret = f.secret.value;
  const result = await requestJson("PUT", "/api/results/webhook", body);
  checkAuth(result);
  if (result.ok) {
    f.secret.value = "";
    drawWebhook(result.body);
    say($("webhook-result"), true, t("desk.saved"));
    loadResults();
  } else {
    // The address refused by the route's schema (invalid_request) is said as the service's
    // own check says it.
    const code = result.status === 422 ? "invalid_webhook" : null;
    say($("webhook-result"), false, code ? errorText({ code }).text : refusal(result));
  }
});

// -- the page --------------------------------------------------------------------------------
function setTitle() { document.title = `${t("desk.title")} · ${t("app.title")}`; }

applyI18n();
setTitle();
bindLangToggle($("lang"));
onLangChange(() => {
  setTitle();
  showStatus($("conn"), feed.status, t);
  for (const entry of tables.values()) drawTable(entry);
  drawQueues();
  drawTokenTables();
  if (presets.length) drawPresets();
  if (webhook) drawWebhook(webhook);
  if (lastIssued) showIssued(lastIssued, { focus: false });
  if (tab === "referees" || tab === "results") refresh();
});
// The match clocks count on the cards: redrawn every second (the state has their deadline).
setInterval(() => {
  for (const entry of tables.values()) {
    if (entry.state) drawMatchClock(entry.el.querySelector(".match-clock"), entry.state, feed.serverNow());
  }
}, 1000);
showStatus($("conn"), feed.status, t);
feed.start();
signin.check();
window.shotclockDesk = { tables, feed, get draw() { return draw; }, get tab() { return tab; } };
