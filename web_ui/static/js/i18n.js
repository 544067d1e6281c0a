// Russian and English for every page. The language comes from ?lang=, then the toggle
// remembered in localStorage, then navigator.language. Refusals from the server are
// translated by their error code; the rule number is shown as is in both languages, and
// an unknown code falls back to the server's English message.

const STORAGE_KEY = "shotclock.lang";
export const LANGS = ["ru", "en"];

const DICT = {
  en: {
    "app.title": "Shot clock",
    "lang.toggle": "RU",
    "lang.toggle.title": "Русский",
    "conn.connecting": "connecting…",
    "conn.live": "live",
    "conn.offline": "offline: reconnecting…",
    "conn.unknown_table": "no such table",
    "phase.ready": "ready",
    "phase.running": "running",
    "phase.paused": "paused",
    "phase.expired": "time is up",
    "phase.frame_over": "frame over",
    "phase.off": "no timer",
    "label.round": "Round",
    "label.limit": "Limit",
    "label.frame": "Frame",
    "label.visit": "Visit",
    "label.extensions": "Ext.",
    "label.extensions_left": "Extensions left",
    "label.fouls": "Fouls",
    "label.whites": "Whites",
    "label.frames": "Frames",
    "label.score": "Score",
    "label.at_table": "At the table",
    "label.table": "Table",
    "label.players": "Players",
    "label.clock": "Clock",
    "label.phase": "Phase",
    "label.timer": "Timer",
    "label.sec": "s",
    "btn.start": "Start",
    "btn.accept": "Start (accept)",
    "btn.shot": "Shot",
    "btn.frame_over": "Frame over",
    "btn.extension": "Extension",
    "btn.turn": "Turn",
    "btn.pause": "Pause",
    "btn.resume": "Resume",
    "btn.foul": "Foul",
    "btn.hand_back": "Hand back",
    "btn.hand_back_to": "Hand back to {name}",
    "btn.new_frame": "New frame",
    "btn.undo": "Undo",
    "btn.undo_what": "Undo: {what}",
    "btn.cancel": "Cancel",
    "btn.confirm": "Confirm",
    "btn.save": "Save",
    "btn.close": "Close",
    "btn.token": "Token",
    "btn.sound_on": "Click to enable sound",
    "btn.sound_off": "Sound on",
    "btn.create": "Create table",
    "undo.nothing": "nothing to undo",
    "undo.confirm": "Take back the last step: {what}?",
    "step.start": "start",
    "step.shot": "shot",
    "step.extension": "extension",
    "step.pause": "pause",
    "step.resume": "resume",
    "step.turn": "turn",
    "step.foul": "foul",
    "step.hand_back": "hand-back",
    "step.new_frame": "new frame",
    "step.call": "call",
    "step.set_time": "time correction",
    "step.expiry": "expiry (time foul)",
    "foul.title": "Foul",
    "foul.reason": "Reason",
    "foul.other": "Other reason (free text)",
    "foul.player": "Fouled by",
    "foul.r.no_contact": "Cue ball hit no ball",
    "foul.r.off_table": "Ball off the table",
    "foul.r.double_hit": "Double hit / push",
    "foul.r.touch": "Touched a ball",
    "foul.r.no_foot": "No foot on the floor",
    "foul.r.wrong_ball": "Wrong ball / no call",
    "foul.r.other": "Other",
    "frame.title": "End the frame and start a new one?",
    "frame.winner": "Winner of this frame",
    "frame.no_winner": "no winner recorded",
    "token.title": "Referee token",
    "token.help": "Needed when the server has SHOTCLOCK_REFEREE_TOKEN set. Kept on this device.",
    "token.needed": "This command needs the referee token: enter it under “Token”.",
    "banner.refused": "Refused",
    "banner.rule": "rule {rule}",
    "banner.network": "No connection to the server: the press was not applied.",
    "banner.done": "{what}: done",
    "hall.title": "Hall",
    "hall.empty": "No tables yet.",
    "hall.pages": "Pages",
    "hall.create": "New table",
    "hall.id": "Table id",
    "hall.player_a": "Player A (breaks first)",
    "hall.player_b": "Player B",
    "hall.timer": "Timer (12.1: off = no time control)",
    "hall.race_to": "Race to (frames to win; empty = open-ended)",
    "hall.profile": "Time profile (seconds)",
    "hall.shot_s": "Shot limit",
    "hall.full_rounds": "Full rounds",
    "hall.step_s": "Step down per round",
    "hall.floor_s": "Floor",
    "hall.extension_s": "Extension",
    "hall.ext_per_frame": "Extensions per frame",
    "hall.warnings_s": "Warnings at (s, comma separated)",
    "hall.created": "Table {id} created",
    "page.referee": "Referee",
    "page.overlay": "Overlay",
    "page.display": "Display",
    "display.no_table": "Add ?table=ID to the address",
    "timer.on": "on",
    "timer.off": "off",
    "winner": "{name} wins the frame",
    "flash.foul": "Foul: {name}",
    "flash.extension": "Extension: {name}",
    "flash.expired": "Time! {name}",
    "flash.turn": "{name} to the table",
    "flash.frame": "Frame {frame}",
    "err.unknown": "{message}",
  },
  ru: {
    "app.title": "Таймер удара",
    "lang.toggle": "EN",
    "lang.toggle.title": "English",
    "conn.connecting": "подключение…",
    "conn.live": "в эфире",
    "conn.offline": "нет связи: переподключение…",
    "conn.unknown_table": "такого стола нет",
    "phase.ready": "готов",
    "phase.running": "идёт отсчёт",
    "phase.paused": "пауза",
    "phase.expired": "время вышло",
    "phase.frame_over": "партия окончена",
    "phase.off": "без таймера",
    "label.round": "Раунд",
    "label.limit": "Лимит",
    "label.frame": "Партия",
    "label.visit": "Подход",
    "label.extensions": "Продл.",
    "label.extensions_left": "Продлений осталось",
    "label.fouls": "Фолы",
    "label.whites": "Белые",
    "label.frames": "Партии",
    "label.score": "Счёт",
    "label.at_table": "У стола",
    "label.table": "Стол",
    "label.players": "Игроки",
    "label.clock": "Время",
    "label.phase": "Фаза",
    "label.timer": "Таймер",
    "label.sec": "с",
    "btn.start": "Старт",
    "btn.accept": "Старт (принять)",
    "btn.shot": "Удар",
    "btn.frame_over": "Партия окончена",
    "btn.extension": "Продление",
    "btn.turn": "Переход хода",
    "btn.pause": "Пауза",
    "btn.resume": "Продолжить",
    "btn.foul": "Фол",
    "btn.hand_back": "Вернуть ход",
    "btn.hand_back_to": "Вернуть ход: {name}",
    "btn.new_frame": "Новая партия",
    "btn.undo": "Отменить",
    "btn.undo_what": "Отменить: {what}",
    "btn.cancel": "Отмена",
    "btn.confirm": "Подтвердить",
    "btn.save": "Сохранить",
    "btn.close": "Закрыть",
    "btn.token": "Токен",
    "btn.sound_on": "Нажмите, чтобы включить звук",
    "btn.sound_off": "Звук включён",
    "btn.create": "Создать стол",
    "undo.nothing": "нечего отменять",
    "undo.confirm": "Отменить последний шаг: {what}?",
    "step.start": "старт",
    "step.shot": "удар",
    "step.extension": "продление",
    "step.pause": "пауза",
    "step.resume": "продолжение",
    "step.turn": "переход хода",
    "step.foul": "фол",
    "step.hand_back": "возврат хода",
    "step.new_frame": "новая партия",
    "step.call": "заказ",
    "step.set_time": "поправка времени",
    "step.expiry": "истечение времени (фол)",
    "foul.title": "Фол",
    "foul.reason": "Причина",
    "foul.other": "Другая причина (свободный текст)",
    "foul.player": "Кто нарушил",
    "foul.r.no_contact": "Биток не коснулся шара",
    "foul.r.off_table": "Шар вылетел за борт",
    "foul.r.double_hit": "Двойное касание / толчок",
    "foul.r.touch": "Касание шара",
    "foul.r.no_foot": "Нет ноги на полу",
    "foul.r.wrong_ball": "Не тот шар / нет заказа",
    "foul.r.other": "Другое",
    "frame.title": "Закончить партию и начать новую?",
    "frame.winner": "Победитель партии",
    "frame.no_winner": "без победителя",
    "token.title": "Токен судьи",
    "token.help": "Нужен, если на сервере задан SHOTCLOCK_REFEREE_TOKEN. Хранится на этом устройстве.",
    "token.needed": "Для этой команды нужен токен судьи: введите его в «Токен».",
    "banner.refused": "Отказ",
    "banner.rule": "правило {rule}",
    "banner.network": "Нет связи с сервером: нажатие не выполнено.",
    "banner.done": "{what}: выполнено",
    "hall.title": "Зал",
    "hall.empty": "Столов пока нет.",
    "hall.pages": "Страницы",
    "hall.create": "Новый стол",
    "hall.id": "Номер стола",
    "hall.player_a": "Игрок А (разбивает первым)",
    "hall.player_b": "Игрок Б",
    "hall.timer": "Таймер (12.1: выкл. = без контроля времени)",
    "hall.race_to": "Матч до побед (партий; пусто = без ограничения)",
    "hall.profile": "Регламент времени (секунды)",
    "hall.shot_s": "Лимит на удар",
    "hall.full_rounds": "Полных раундов",
    "hall.step_s": "Уменьшение за раунд",
    "hall.floor_s": "Минимум",
    "hall.extension_s": "Продление",
    "hall.ext_per_frame": "Продлений за партию",
    "hall.warnings_s": "Предупреждения (с, через запятую)",
    "hall.created": "Стол {id} создан",
    "page.referee": "Судья",
    "page.overlay": "Оверлей",
    "page.display": "Табло",
    "display.no_table": "Добавьте ?table=НОМЕР к адресу",
    "timer.on": "вкл.",
    "timer.off": "выкл.",
    "winner": "Партию выиграл(а) {name}",
    "flash.foul": "Фол: {name}",
    "flash.extension": "Продление: {name}",
    "flash.expired": "Время! {name}",
    "flash.turn": "К столу: {name}",
    "flash.frame": "Партия {frame}",
    "err.unknown": "{message}",
  },
};

// Refusals and request errors by code. {name} is the player at the table.
const ERRORS = {
  en: {
    already_running: "the clock is already running",
    paused: "the clock is paused: resume it instead",
    not_running: "the clock is not running: start it first",
    too_late: "the shot time has already run out; the expiry stands",
    extension_too_late: "an extension must be asked before the main time runs out",
    extension_used: "{name} already used the extension this frame",
    already_paused: "the clock is already paused",
    not_paused: "the clock is not paused",
    turn_already_passed: "the turn already passed on the time foul; start (accept) or hand back",
    already_accepted: "the opponent already accepted by playing on",
    expired: "time already ran out: undo the expiry first",
    frame_over: "the frame is over: start a new frame",
    not_allowed: "not allowed in this phase of the clock",
    no_timer: "this match is played without a timer",
    no_foul_pending: "there is no foul to hand back",
    nothing_to_undo: "there is nothing to undo",
    unauthorized: "this command needs the referee token",
    unknown_table: "no such table",
    table_exists: "a table with this id already exists",
    invalid_profile: "the time profile is not valid",
    invalid_players: "players must be two names of 1 to 60 characters",
    store_unavailable: "applied on the table, but not yet saved: the disk is not taking writes",
    store_unwritable: "the event store cannot write to disk: the clock runs, but nothing new is saved",
    stale_press: "the press reached the service more than 2 s late and was not applied: press again",
    press_in_future: "the press time is ahead of the service's clock: the sender's clock is wrong",
    // The strict call (7.1, the call command): rules helper, issue 12.
    call_after_shot: "the shot was already played: give its call in the shot result",
    call_on_break: "the break is played without a call (4.4)",
    call_after_expiry: "time ran out: the opponent accepts (Start) or hands back first",
    call_differs_from_announced: "a different call was announced before the shot: leave the call out of the result",
  },
  ru: {
    already_running: "время уже идёт",
    paused: "таймер на паузе: нажмите «Продолжить»",
    not_running: "отсчёт для этого удара не запущен: сначала «Старт»",
    too_late: "время на удар уже вышло; истечение времени засчитано",
    extension_too_late: "продление можно взять только до истечения основного времени",
    extension_used: "{name} уже брал(а) продление в этой партии",
    already_paused: "таймер уже на паузе",
    not_paused: "таймер не на паузе",
    turn_already_passed: "ход уже перешёл из-за фола по времени; «Старт» (принять) или вернуть ход",
    already_accepted: "соперник уже принял позицию, продолжив игру",
    expired: "время уже вышло: сначала отмените истечение",
    frame_over: "партия окончена: начните новую партию",
    not_allowed: "в этой фазе таймера так нельзя",
    no_timer: "матч играется без таймера",
    no_foul_pending: "нет фола, после которого можно вернуть ход",
    nothing_to_undo: "нечего отменять",
    unauthorized: "для этой команды нужен токен судьи",
    unknown_table: "такого стола нет",
    table_exists: "стол с таким номером уже есть",
    invalid_profile: "регламент времени задан неверно",
    invalid_players: "нужны два имени игроков длиной от 1 до 60 символов",
    store_unavailable: "применено на столе, но ещё не сохранено: диск не принимает запись",
    store_unwritable: "журнал событий не может писать на диск: часы идут, но новое не сохраняется",
    stale_press: "нажатие дошло до сервера позже чем через 2 с и не применено: нажмите ещё раз",
    press_in_future: "время нажатия впереди часов сервера: часы отправителя идут неверно",
    call_after_shot: "удар уже сыгран: укажите заказ в результате удара",
    call_on_break: "разбой играется без заказа (4.4)",
    call_after_expiry: "время вышло: соперник сначала принимает (Старт) или возвращает ход",
    call_differs_from_announced: "до удара был объявлен другой заказ: не указывайте заказ в результате",
  },
};

function pickLang() {
  const fromQuery = new URLSearchParams(location.search).get("lang");
  if (LANGS.includes(fromQuery)) return fromQuery;
  let stored = null;
  try { stored = localStorage.getItem(STORAGE_KEY); } catch { /* private mode */ }
  if (LANGS.includes(stored)) return stored;
  const nav = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
  return nav.toLowerCase().startsWith("ru") ? "ru" : "en";
}

export let lang = pickLang();
const listeners = [];

function fill(text, vars) {
  return text.replace(/\{(\w+)\}/g, (m, k) => (vars && vars[k] !== undefined ? String(vars[k]) : m));
}

/** Add page-specific strings: {en: {...}, ru: {...}} (keys already present are kept). */
export function addStrings(extra) {
  for (const code of LANGS) {
    for (const [key, text] of Object.entries(extra[code] || {})) DICT[code][key] ??= text;
  }
}

/** Add error codes known to one page: {en: {code: text}, ru: {...}}. */
export function addErrors(extra) {
  for (const code of LANGS) {
    for (const [key, text] of Object.entries(extra[code] || {})) ERRORS[code][key] ??= text;
  }
}

export function t(key, vars) {
  const text = DICT[lang][key] ?? DICT.en[key] ?? key;
  return fill(text, vars);
}

/** The reason for a refused press, in the page's language: {text, rule, code}. */
export function errorText(error, vars) {
  const code = error && error.code;
  const known = ERRORS[lang][code];
  const text = known ? fill(known, vars || {}) : (error && error.message) || String(code || "error");
  return { text, rule: (error && error.rule) || null, code: code || null };
}

/** Fill every [data-i18n], [data-i18n-title], [data-i18n-placeholder] under root. */
export function applyI18n(root = document) {
  document.documentElement.lang = lang;
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.title = t(el.dataset.i18nTitle);
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) {
    el.placeholder = t(el.dataset.i18nPlaceholder);
  }
}

export function setLang(next) {
  if (!LANGS.includes(next)) return;
  lang = next;
  try { localStorage.setItem(STORAGE_KEY, next); } catch { /* private mode */ }
  // Keep an explicit ?lang= in the address in step with the toggle, so a reload agrees.
  const url = new URL(location.href);
  if (url.searchParams.has("lang")) {
    url.searchParams.set("lang", next);
    history.replaceState(null, "", url);
  }
  applyI18n();
  for (const fn of listeners) fn(next);
}

export function onLangChange(fn) { listeners.push(fn); }

/** Wire a button as the language toggle (shows the other language's code). */
export function bindLangToggle(button) {
  if (!button) return;
  const label = () => {
    button.textContent = t("lang.toggle");
    button.title = t("lang.toggle.title");
  };
  label();
  button.addEventListener("click", () => setLang(lang === "ru" ? "en" : "ru"));
  onLangChange(label);
}
