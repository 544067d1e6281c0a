// The tournament around the table on every page (issue 25): the match clock
// (match_limit_ms) with the organiser's choice at its limit, and slow play. Small helpers
// the pages call from their own draw/tick; nothing here counts: the match clock's time is
// derived from its deadline, as the shot clock's is.

import { requestJson } from "./api.js";
import { addErrors, addStrings, errorText, onLangChange, t } from "./i18n.js";
import { MatchClockPhase } from "./phases.js";

addStrings({
  en: {
    "mc.label": "Match",
    "mc.waiting": "Match {time} · from the break",
    "mc.running": "Match {time}",
    "mc.paused": "Match {time} · paused",
    "mc.expired": "Match time is up · {choice}",
    "mc.drawn": "Match drawn at the time limit",
    "atlimit.leader_wins": "at the limit: the frame in play is finished, the leader wins (level: a draw)",
    "atlimit.frame_decides": "at the limit: the frame in play decides the match",
    "atlimit.tie_break_frame": "at the limit: the frame in play is finished, the leader wins (level: a tie-break frame)",
    "atlimit.shot_clock": "at the limit: a shot clock for every shot",
    "slow.on": "Shot clock on (slow play): {s} s a shot",
    "btn.shot_clock_on": "Shot clock on",
    "prompt.shot_clock_on": "Switch the shot clock on for the rest of the match: the reason?",
    "next.line": "Next: {a} – {b}, race to {n}",
    "btn.start_next": "Start next match",
    "draw.title": "Draw",
    "draw.upload": "Import a draw (CSV or JSON)",
    "draw.import": "Import",
    "draw.imported": "{n} matches imported",
    "draw.refused": "Refused, nothing imported:",
    "draw.line": "line {line}: {reason}",
    "draw.queue": "Table {table}",
    "draw.playing": "playing",
    "draw.unassigned": "Next free table",
    "draw.empty": "no match",
    "draw.assign": "Assign",
    "draw.match": "Match",
    "draw.to_table": "to table",
    "draw.next_free": "next free table",
    "file.choose": "Choose the draw file…",
    "file.none": "no file chosen",
  },
  ru: {
    "mc.label": "Матч",
    "mc.waiting": "Матч {time} · с разбоя",
    "mc.running": "Матч {time}",
    "mc.paused": "Матч {time} · пауза",
    "mc.expired": "Время матча вышло · {choice}",
    "mc.drawn": "Ничья по времени матча",
    "atlimit.leader_wins": "по времени: партия доигрывается, побеждает лидер (поровну: ничья)",
    "atlimit.frame_decides": "по времени: текущая партия решает матч",
    "atlimit.tie_break_frame": "по времени: партия доигрывается, побеждает лидер (поровну: решающая партия)",
    "atlimit.shot_clock": "по времени: контроль времени на каждый удар",
    "slow.on": "Контроль времени включён: {s} с на удар",
    "btn.shot_clock_on": "Включить контроль времени",
    "prompt.shot_clock_on": "Включить контроль времени до конца матча: причина?",
    "next.line": "Далее: {a} – {b}, до {n} побед",
    "next.line_one": "Далее: {a} – {b}, до {n} победы",
    "btn.start_next": "Начать следующий матч",
    "draw.title": "Сетка",
    "draw.upload": "Загрузить сетку (CSV или JSON)",
    "draw.import": "Загрузить",
    "draw.imported": "загружено матчей: {n}",
    "draw.refused": "Отклонено, ничего не загружено:",
    "draw.line": "строка {line}: {reason}",
    "draw.queue": "Стол {table}",
    "draw.playing": "идёт",
    "draw.unassigned": "Первый свободный стол",
    "draw.empty": "нет матчей",
    "draw.assign": "Назначить",
    "draw.match": "Матч",
    "draw.to_table": "на стол",
    "draw.next_free": "первый свободный стол",
    "file.choose": "Выбрать файл сетки…",
    "file.none": "файл не выбран",
  },
});

// The draw file's problems by code (clock_service/edges/tournament/draw.py), with their
// particulars; and the refusals of the desk's doors. Column names are the file's own.
addErrors({
  en: {
    draw_formula: "{column} “{value}” starts with “{char}”: a spreadsheet would run it as a formula (=, +, -, @ are refused at the start)",
    draw_missing: "{column} is missing",
    draw_too_long: "{column} “{value}…” is longer than {max} characters",
    draw_not_text: "{column} must be text, got {value}",
    draw_bad_text: "{column}: {why}",
    draw_not_whole: "{column} must be a whole number from {low} to {high}, got {value}",
    draw_two_players: "players must be two names",
    draw_unknown_table: "there is no table “{table}”: the tables are {tables} (or “next” for the next free table)",
    draw_too_large: "the file is larger than {max} bytes",
    draw_not_json: "the file is not JSON",
    draw_not_a_list: "the JSON must be a list of matches (or {\"matches\": [...]})",
    draw_not_an_object: "a match must be an object",
    draw_missing_columns: "missing column(s) {columns}; the columns are {all} (event, round and table may be left out)",
    draw_extra_cells: "more cells than columns",
    draw_unknown_format: "a draw is a CSV or JSON file",
    draw_too_many: "more than {max} matches",
    draw_duplicate: "match number {number} twice (also on line {other})",
    draw_number_taken: "match number {number} is already in the draw",
    draw_empty: "the file holds no match",
    draw_not_utf8: "the file is not UTF-8 text (save it as “CSV UTF-8”)",
    match_in_play: "a match is in play on this table: start the next one when it is over, or give the reason for leaving it unfinished",
    invalid_webhook: "the address must start with http:// or https:// (the secret at most 200 characters)",
    webhook_from_environment: "the webhook is set on the service (SHOTCLOCK_RESULTS_WEBHOOK) and cannot be changed here",
  },
  ru: {
    draw_formula: "{column} «{value}» начинается с «{char}»: таблица выполнит это как формулу (=, +, -, @ в начале не допускаются)",
    draw_missing: "не заполнено поле {column}",
    draw_too_long: "{column} «{value}…» длиннее {max} символов",
    draw_not_text: "{column} должно быть текстом, а не {value}",
    draw_bad_text: "{column}: недопустимый текст ({why})",
    draw_not_whole: "{column} должно быть целым числом от {low} до {high}, а не {value}",
    draw_two_players: "игроков должно быть двое",
    draw_unknown_table: "нет стола «{table}»: столы — {tables} (или «next» — первый свободный)",
    draw_too_large: "файл больше {max} байт",
    draw_not_json: "файл — не JSON",
    draw_not_a_list: "JSON должен быть списком матчей (или {\"matches\": [...]})",
    draw_not_an_object: "матч должен быть объектом",
    draw_missing_columns: "нет столбцов {columns}; столбцы: {all} (event, round и table можно не указывать)",
    draw_extra_cells: "ячеек больше, чем столбцов",
    draw_unknown_format: "сетка — это файл CSV или JSON",
    draw_too_many: "больше {max} матчей",
    draw_duplicate: "номер матча {number} дважды (ещё в строке {other})",
    draw_number_taken: "матч номер {number} уже есть в сетке",
    draw_empty: "в файле нет ни одного матча",
    draw_not_utf8: "файл не в кодировке UTF-8 (сохраните его как «CSV UTF-8»)",
    match_in_play: "на столе идёт матч: начните следующий, когда он закончится, или укажите причину, по которой он не доигран",
    invalid_webhook: "адрес должен начинаться с http:// или https:// (секрет — не длиннее 200 символов)",
    webhook_from_environment: "адрес результатов задан на сервисе (SHOTCLOCK_RESULTS_WEBHOOK), здесь его не изменить",
  },
});

/** A file input shown in the page's words (the browser's own button speaks the browser's
 * language, not the page's): ``.file-pick`` holds the input, its label and the file's name. */
export function wireFilePick(pick) {
  const input = pick.querySelector('input[type="file"]');
  const name = pick.querySelector(".file-name");
  const show = () => {
    const file = input.files[0];
    name.textContent = file ? file.name : t("file.none");
    name.dataset.chosen = String(Boolean(file));
  };
  input.addEventListener("change", show);
  onLangChange(show);
  show();
}

/** A draw file's problem in the page's language: "line 4: ..." (the service's English
 * reason when the page does not know its code). */
export function drawProblem(problem) {
  const { text } = errorText({ code: problem.code, message: problem.reason }, problem.data || {});
  return t("draw.line", { line: problem.line, reason: text });
}

/** Remaining match time in ms at the server's ``now``, or null without a match clock. */
export function matchRemaining(state, serverNowMs) {
  const mc = state && state.match_clock;
  if (!mc) return null;
  if (mc.phase === MatchClockPhase.RUNNING && mc.deadline != null) {
    return Math.max(0, Math.ceil(mc.deadline - serverNowMs));
  }
  return mc.remaining_ms;
}

/** 1:59:30 or 4:05 (whole seconds, rounded up as the shot clock rounds). */
export function formatMatchTime(ms) {
  const total = Math.ceil(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** The line a page shows for the match clock, and its stage (ok, warn at 10 min, last at
 * 5 min, expired), or null when the match has no limit. */
export function matchClockLine(state, serverNowMs, { short = false } = {}) {
  const mc = state && state.match_clock;
  if (!mc) return null;
  const m = state.match || {};
  if (m.drawn) return { text: t("mc.drawn"), stage: "expired", title: "" };
  const left = matchRemaining(state, serverNowMs);
  const choice = t(`atlimit.${mc.at_limit}`);
  if (mc.phase === MatchClockPhase.EXPIRED) return { text: t("mc.expired", { choice }), stage: "expired", title: mc.rule };
  const time = formatMatchTime(left);
  // short (the overlay's narrow bug): the time alone, its state in the colour and the title
  const key = mc.phase === MatchClockPhase.STOPPED || short ? "mc.running" : `mc.${mc.phase}`;
  const stage = left <= 300000 ? "last" : left <= 600000 ? "warn" : "ok";
  return { text: t(key, { time }), stage, title: choice };
}

/** Draw the match clock into ``el`` (hidden when the match has none); ``choiceEl``: where
 * the organiser's choice at the limit is written for the players (the display). */
export function drawMatchClock(el, state, serverNowMs, choiceEl = null, options = {}) {
  if (!el) return;
  const line = matchClockLine(state, serverNowMs, options);
  if (choiceEl) {
    const mc = state && state.match_clock;
    const text = mc && mc.phase !== MatchClockPhase.EXPIRED && !(state.match || {}).drawn
      ? t(`atlimit.${mc.at_limit}`) : "";
    choiceEl.classList.toggle("hidden", !text);
    if (choiceEl.textContent !== text) choiceEl.textContent = text;
  }
  el.classList.toggle("hidden", !line);
  if (!line) return;
  if (el.textContent !== line.text) el.textContent = line.text;
  if (el.dataset.stage !== line.stage) el.dataset.stage = line.stage;
  if (el.title !== line.title) el.title = line.title;
}

// -- the draw's next match (GET /api/tables/{id}/next) ----------------------------------------
/** The draw's next match for the table, or null; asked once per seq while the match is
 * over (a page never polls while a match is played). */
export class NextMatch {
  constructor(table, onChange) {
    this.table = table;
    this.onChange = onChange;
    this.next = null;
    this.askedAt = null;
    this.timer = 0;
  }

  /** Call with every state: asks the service when the match is over (again every 5 s while
   * it stays over: the director may assign a match meanwhile). */
  update(state) {
    const over = Boolean(state && state.match && state.match.over);
    clearTimeout(this.timer);
    if (!over) {
      if (this.next !== null) { this.next = null; this.onChange(null); }
      return;
    }
    this.ask();
    this.timer = setTimeout(() => this.update(state), 5000);
  }

  async ask() {
    const result = await requestJson("GET", `/api/tables/${encodeURIComponent(this.table)}/next`);
    const next = result.ok ? result.body.next : null;
    if (JSON.stringify(next) !== JSON.stringify(this.next)) {
      this.next = next;
      this.onChange(next);
    }
  }

  start(reason) {
    return requestJson("POST", `/api/tables/${encodeURIComponent(this.table)}/next`,
      reason ? { reason } : {});
  }
}

export function nextLine(next) {
  return next ? t("next.line", { a: next.players[0], b: next.players[1], n: next.race_to }) : "";
}
