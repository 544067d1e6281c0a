// The referee's report of a shot (the `result` command) and the summary of what the rules
// made of it (the `shot.result` event, then `respot`, `frame.ended`, `match.ended`).
//
// Vocabulary as clock_service/core/rules/call.py: six pockets, six cushion segments, contacts
// "striker>struck" with the balls cue, colour, white1..white7.
//
// The panel is this module's own: `mountResultPanel(host, page)` builds it into the
// console's reserved place and wires it; the console page gives it
//   state()            the table's latest state,
//   send(name, body)   a command through the console's ordered queue -> {ok, status, body},
//   showError(error)   a refusal ({code, message, rule}) or a local problem ({key}),
//   showWhy(refused)   why the result cannot be sent now (state.refused.result),
//   busy()             a press is still on its way (the state may be behind: send anyway),
//   sent(before)       after an accepted result (the console closes the panel, scrolls back
//                      and reads the summary),
// and gets {open(), close(), redraw(), isOpen()}.
//
// Two modes, from the state's `allowed` (issue 12): while the player is at the table before
// the shot (`call` allowed) the panel is the call editor and announces the call (7.1, the
// `call` command); after the shot it is the result, judged against the announced call, which
// it shows; a call given there is the referee recording it after the shot.
// The break's legality is an explicit choice with "legal" preselected (4.2, D11); the fouls
// the referee saw are sent as codes (9, D10) and the fouls in the card are worded from their
// codes in both languages.

import { addStrings, applyI18n, lang, onLangChange, t } from "./i18n.js";
import { requestJson } from "./api.js";
import { ClockPhase } from "./phases.js";

export const POCKETS = ["top_left", "top_right", "middle_left", "middle_right", "bottom_left",
  "bottom_right"];
export const CUSHIONS = ["top", "left_top", "right_top", "left_bottom", "right_bottom", "bottom"];
// The contacts offered as buttons: the common ones of one shot (whites are labels inside it).
export const CONTACTS = ["cue>colour", "cue>white1", "white1>colour", "white1>white2",
  "white2>colour", "cue>white2", "colour>white1", "colour>white2", "white2>white3",
  "white3>colour"];

addStrings({
  en: {
    "res.open": "Shot result…",
    "res.open_call": "Call…",
    "res.open_called": "Call ✓…",
    "res.title": "Shot result",
    "res.match_over_title": "Match over",
    "res.frame_over_title": "Frame over",
    "res.over_help": "No shot to report until the next frame starts.",
    "res.match_over_help": "No shot to report: the match is over.",
    "res.call_title": "Call",
    "res.announce": "Announce the call",
    "res.announced": "Announced before the shot",
    "res.announced_none": "No call announced yet",
    "res.call_hint": "Tap the pocket, then the cushions and contacts in order; the cue ball's first contact may be left out.",
    "res.break": "break",
    "res.whites": "Whites potted",
    "res.colour": "Coloured ball potted",
    "res.called": "Call given after the shot",
    "res.legal_break": "The break (4.2)",
    "res.break_legal": "Legal",
    "res.break_illegal": "Illegal: foul 4.3",
    "res.default": "default",
    "res.yes": "Yes",
    "res.no": "No",
    "res.call_timing.announced": "Called before the shot: {call}",
    "res.call_timing.after_shot": "Call recorded after the shot: {call}",
    "res.call_failed": "not fulfilled",
    "step.call": "call",
    "foul.code.ball_off_table": "Ball off the table",
    "foul.code.double_hit": "Double hit",
    "foul.code.push_shot": "Push shot",
    "foul.code.no_ball_contact": "The cue ball touched no ball",
    "foul.code.touched_ball": "Touched a ball",
    "foul.code.out_of_turn": "Played out of turn",
    "foul.code.other": "Other (describe)",
    "foul.code.illegal_break": "Illegal break",
    "foul.code.over_limit": "More than three whites credited",
    "foul.code.colour_without_call": "The coloured ball potted without a call (6.3)",
    "foul.code.white_and_colour": "A white and the coloured ball potted with one shot",
    "foul.code.call_not_fulfilled": "The call not fulfilled",
    "foul.code.unannounced_contact": "An unannounced contact",
    "foul.code.colour_before_three": "The coloured ball before three whites without a special shot",
    "foul.code.shot_time": "Shot time exceeded",
    "foul.balls": "Which balls",
    "foul.balls.colour": "the coloured ball",
    "foul.balls.white": "a white",
    "foul.balls.white2": "two whites",
    "foul.balls.colour_white": "the coloured ball and a white",
    "foul.whites_n": "{n} whites",
    "foul.with": "With",
    "foul.with.none": "—",
    "foul.with.hand": "the hand",
    "foul.with.cue": "the cue",
    "foul.with.clothing": "clothing",
    "res.foul_seen": "Foul seen",
    "res.foul_none": "none",
    "res.foul_text": "or describe the foul",
    "res.call": "Call",
    "res.route": "Route (what happened)",
    "res.route_tab": "Route",
    "res.clear_report": "Clear",
    "res.route_copy": "Route = call",
    "res.pocket": "Pocket",
    "res.dropped": "Dropped in",
    "res.cushions": "Cushions",
    "res.contacts": "Contacts",
    "res.path": "Path",
    "res.undo_tap": "⌫ last",
    "res.clear": "clear",
    "res.type.normal": "Normal",
    "res.type.early_cushion": "Early: cushion",
    "res.type.early_combination": "Early: combination",
    "res.cue_ball": "Cue ball",
    "res.cue.white": "white",
    "res.cue.colour": "coloured",
    "res.unannounced": "Unannounced contact affected the route (7.4)",
    "res.jaw": "Jaw touched before the drop (7.5)",
    "res.send": "Send result",
    "res.confirm_title": "Send this result?",
    "res.warn_title": "This result is a foul — send it?",
    "res.warn_loss_title": "This result loses the frame — send it?",
    "res.warn_foul": "Foul — {name}: {foul}",
    "res.warn_loss": "Technical loss: second foul of {name}; the frame goes to {other} (10.5)",
    "res.need_pocket": "Tap the pocket the coloured ball dropped into (route).",
    "res.need_call_pocket": "Tap the called pocket on the call diagram.",
    "res.need_foul_text": "Describe the foul (Other).",
    "res.sent": "result",
    "res.summary": "{name}: shot result",
    "res.whites_credited": "Whites credited: {n}",
    "res.no_whites": "No whites credited",
    "res.foul": "Foul — {name}",
    "step.result": "shot result",
    "res.turn_stays": "{name} stays at the table",
    "res.turn_passes": "The turn passes to {name}",
    "res.choice": "{name} chooses: play on (Start) or hand back",
    "res.frame_end": "Frame over. Winner: {name} ({reason})",
    "res.frame_end_none": "Frame over ({reason})",
    "res.match_end": "Match over. Winner: {name}, {score}",
    "respot.line": "Re-spot: {where}",
    "respot.colour": "the coloured ball on the back spot",
    "respot.whites": "{n} white(s) at the middle of the back short cushion",
    "pocket.top_left": "top left", "pocket.top_right": "top right",
    "pocket.middle_left": "middle left", "pocket.middle_right": "middle right",
    "pocket.bottom_left": "bottom left", "pocket.bottom_right": "bottom right",
    "cushion.top": "top", "cushion.bottom": "bottom", "cushion.left_top": "left upper",
    "cushion.left_bottom": "left lower", "cushion.right_top": "right upper",
    "cushion.right_bottom": "right lower",
    "ball.cue": "cue", "ball.colour": "colour", "ball.white": "W",
    // The announced call on the display and the overlay, while it is in force (7.1).
    "call.show": "Call: {call}",
    "call.pocket": "{pocket} pocket",
    "call.cushions": "cushion {list}",
    "call.cushion_1": "{n} cushion",
    "call.cushion_few": "{n} cushions",
    "call.cushion_many": "{n} cushions",
    "call.combination": "combination",
  },
  ru: {
    "res.open": "Результат удара…",
    "res.open_call": "Заказ…",
    "res.open_called": "Заказ ✓…",
    "res.title": "Результат удара",
    "res.match_over_title": "Матч окончен",
    "res.frame_over_title": "Партия окончена",
    "res.over_help": "Результат удара не вносится, пока не начнётся следующая партия.",
    "res.match_over_help": "Результат удара не вносится: матч окончен.",
    "res.call_title": "Заказ",
    "res.announce": "Объявить заказ",
    "res.announced": "Объявлен до удара",
    "res.announced_none": "Заказ ещё не объявлен",
    "res.call_hint": "Отметьте лузу, затем борта и касания по порядку; первое касание битка можно не указывать.",
    "res.break": "разбой",
    "res.whites": "Забито белых",
    "res.colour": "Цветной забит",
    "res.called": "Заказ указан после удара",
    "res.legal_break": "Разбой (4.2)",
    "res.break_legal": "Правильный",
    "res.break_illegal": "Неправильный: фол 4.3",
    "res.default": "по умолчанию",
    "res.yes": "Да",
    "res.no": "Нет",
    "res.call_timing.announced": "Заказ до удара: {call}",
    "res.call_timing.after_shot": "Заказ записан после удара: {call}",
    "res.call_failed": "не выполнен",
    "step.call": "заказ",
    "foul.code.ball_off_table": "Шар вылетел со стола",
    "foul.code.double_hit": "Двойное касание",
    "foul.code.push_shot": "Толчок",
    "foul.code.no_ball_contact": "Биток не коснулся ни одного шара",
    "foul.code.touched_ball": "Касание шара",
    "foul.code.out_of_turn": "Удар не в очередь",
    "foul.code.other": "Другое (опишите)",
    "foul.code.illegal_break": "Неправильный разбой",
    "foul.code.over_limit": "Больше трёх засчитанных белых",
    "foul.code.colour_without_call": "Цветной забит без заказа (6.3)",
    "foul.code.white_and_colour": "Белый и цветной забиты одним ударом",
    "foul.code.call_not_fulfilled": "Заказ не выполнен",
    "foul.code.unannounced_contact": "Незаявленное касание",
    "foul.code.colour_before_three": "Цветной до трёх белых без особого удара",
    "foul.code.shot_time": "Превышено время на удар",
    "foul.balls": "Какие шары",
    "foul.balls.colour": "цветной",
    "foul.balls.white": "белый",
    "foul.balls.white2": "два белых",
    "foul.balls.colour_white": "цветной и белый",
    "foul.whites_n": "белых: {n}",
    "foul.with": "Чем",
    "foul.with.none": "—",
    "foul.with.hand": "рукой",
    "foul.with.cue": "кием",
    "foul.with.clothing": "одеждой",
    "res.foul_seen": "Замечен фол",
    "res.foul_none": "нет",
    "res.foul_text": "или опишите фол",
    "res.call": "Заказ",
    "res.route": "Траектория (что было)",
    "res.route_tab": "Траектория",
    "res.clear_report": "Очистить",
    "res.route_copy": "Траектория = заказ",
    "res.pocket": "Луза",
    "res.dropped": "Упал в",
    "res.cushions": "Борта",
    "res.contacts": "Касания",
    "res.path": "Путь",
    "res.undo_tap": "⌫ последнее",
    "res.clear": "очистить",
    "res.type.normal": "Обычный",
    "res.type.early_cushion": "Досрочный: борт",
    "res.type.early_combination": "Досрочный: комбинация",
    "res.cue_ball": "Битком был",
    "res.cue.white": "белый",
    "res.cue.colour": "цветной",
    "res.unannounced": "Незаявленное касание повлияло на путь (7.4)",
    "res.jaw": "Касание губки перед падением (7.5)",
    "res.send": "Отправить результат",
    "res.confirm_title": "Отправить этот результат?",
    "res.warn_title": "Этот результат — фол. Отправить?",
    "res.warn_loss_title": "Этот результат проигрывает партию. Отправить?",
    "res.warn_foul": "Фол — {name}: {foul}",
    "res.warn_loss": "Техническое поражение — {name}: второй фол; партия засчитана. Победитель: {other} (10.5)",
    "res.need_pocket": "Отметьте лузу, в которую упал цветной (траектория).",
    "res.need_call_pocket": "Отметьте заказанную лузу на схеме заказа.",
    "res.need_foul_text": "Опишите фол («Другое»).",
    "res.sent": "результат",
    "res.summary": "{name}: результат удара",
    "res.whites_credited": "Засчитано белых: {n}",
    "res.no_whites": "Белые не засчитаны",
    "res.foul": "Фол — {name}",
    "step.result": "результат удара",
    "res.turn_stays": "Продолжает у стола: {name}",
    "res.turn_passes": "Ход: {name}",
    "res.choice": "Выбор — {name}: играть («Старт») или вернуть ход",
    "res.frame_end": "Партия окончена. Победитель: {name} ({reason})",
    "res.frame_end_none": "Партия окончена ({reason})",
    "res.match_end": "Матч окончен. Победитель: {name}, {score}",
    "respot.line": "Выставить: {where}",
    "respot.colour": "цветной — на заднюю отметку",
    "respot.whites": "белые ({n}) — к середине заднего короткого борта",
    "pocket.top_left": "верхняя левая", "pocket.top_right": "верхняя правая",
    "pocket.middle_left": "средняя левая", "pocket.middle_right": "средняя правая",
    "pocket.bottom_left": "нижняя левая", "pocket.bottom_right": "нижняя правая",
    "cushion.top": "верхний", "cushion.bottom": "нижний", "cushion.left_top": "левый верхний",
    "cushion.left_bottom": "левый нижний", "cushion.right_top": "правый верхний",
    "cushion.right_bottom": "правый нижний",
    "ball.cue": "биток", "ball.colour": "цветной", "ball.white": "Б",
    "call.show": "Заказ: {call}",
    "call.pocket": "{pocket} луза",
    "call.cushions": "борт {list}",
    "call.cushion_1": "{n} борт",
    "call.cushion_few": "{n} борта",
    "call.cushion_many": "{n} бортов",
    "call.combination": "комбинация",
  },
});

// The error texts of the result and call commands are in i18n.js with every other code.

// -- fouls: worded from their codes (9, D10) --------------------------------------------------
// The general fouls a referee reports, in the order the dialogs offer them, and the choices
// of their detail: which balls left the table, what touched a ball.
export const GENERAL_FOULS = ["double_hit", "push_shot", "no_ball_contact", "touched_ball",
  "ball_off_table", "out_of_turn", "other"];
export const OFF_TABLE_CHOICES = { colour: ["colour"], white: ["white"], white2: ["white", "white"],
  colour_white: ["colour", "white"] };
export const TOUCHED_WITH = ["hand", "cue", "clothing"];

/**
 * The fields of a general foul from a dialog's choices: {code, balls?, touched_with?, text?}.
 * `text` is the free text (the foul itself for "other", a note otherwise). Null when "other"
 * has no text (the dialog asks for it).
 */
export function generalFoul(code, { balls = "colour", touchedWith = "", text = "" } = {}) {
  const foul = { code };
  const note = text.trim().slice(0, 200);
  if (code === "ball_off_table") foul.balls = [...(OFF_TABLE_CHOICES[balls] || ["colour"])];
  if (code === "touched_ball" && touchedWith) foul.touched_with = touchedWith;
  if (note) foul.text = note;
  if (code === "other" && !note) return null;
  return foul;
}

/** The `foul` command's fields for a general foul (reason = its text). */
export function foulCommandFields(foul, player) {
  const fields = { code: foul.code, player };
  if (foul.balls) fields.balls = foul.balls;
  if (foul.touched_with) fields.touched_with = foul.touched_with;
  if (foul.text) fields.reason = foul.text;
  return fields;
}

function ballsText(balls) {
  const whites = balls.filter((b) => b === "white").length;
  const parts = [];
  if (balls.includes("colour")) parts.push(t("foul.balls.colour"));
  if (whites === 1) parts.push(t("foul.balls.white"));
  else if (whites > 1) parts.push(t("foul.whites_n", { n: whites }));
  return parts.join(", ");
}

/** One breach in the page's language: its code's words and its detail. */
export function breachText(breach) {
  if (breach.code === "other") return breach.text || breach.reason;
  // English: the server's reason (it says what differed, e.g. which pocket); Russian: the code.
  let text = breach.reason;
  if (lang !== "en") {
    const words = t(`foul.code.${breach.code}`);
    text = words.charAt(0).toLowerCase() + words.slice(1); // inline, after "Фол — Имя: "
    if (breach.balls && breach.balls.length) text += `: ${ballsText(breach.balls)}`;
    if (breach.touched_with) text += ` (${t(`foul.with.${breach.touched_with}`)})`;
    if (breach.text) text += ` (${breach.text})`;
  }
  return text;
}

/** A foul (event data or outcome.fouls[i]): every rule it broke (D5), the rule once each. */
export function foulText(foul) {
  const breaches = Array.isArray(foul.breaches) ? foul.breaches : null;
  if (!breaches || !breaches.length) return foul.reason || "";
  if (breaches.length === 1) return breachText(breaches[0]);
  return breaches.map((b) => `${breachText(b)} (${b.rule})`).join("; ");
}

/** The call as one line: pocket · cushions · contacts · shot type. */
export function callText(call) {
  if (!call) return "–";
  const parts = [t(`pocket.${call.pocket}`)];
  if (call.cushions && call.cushions.length) parts.push(call.cushions.map((c) => t(`cushion.${c}`)).join(", "));
  if (call.contacts && call.contacts.length) parts.push(call.contacts.map(contactLabel).join(", "));
  if (call.shot_type && call.shot_type !== "normal") parts.push(t(`res.type.${call.shot_type}`));
  return parts.join(" · ");
}

/** The announced call for spectators (the display): "Call: bottom left pocket · cushion
 * right lower · cue→W1". */
export function callLine(call) {
  const parts = [t("call.pocket", { pocket: t(`pocket.${call.pocket}`) })];
  if (call.cushions && call.cushions.length) {
    parts.push(t("call.cushions", { list: call.cushions.map((c) => t(`cushion.${c}`)).join(", ") }));
  }
  if (call.contacts && call.contacts.length) parts.push(call.contacts.map(contactLabel).join(", "));
  if (call.shot_type && call.shot_type !== "normal") parts.push(t(`res.type.${call.shot_type}`));
  return t("call.show", { call: parts.join(" · ") });
}

/** The announced call in a few words (the overlay's tag, under its "Call" label): the
 * pocket, how many cushions, "combination": "bottom left · 1 cushion". */
export function callShort(call) {
  const parts = [t(`pocket.${call.pocket}`)];
  const n = (call.cushions || []).length;
  if (n) {
    const ten = n % 10;
    const few = ten >= 2 && ten <= 4 && (n % 100 < 12 || n % 100 > 14);
    parts.push(t(n % 10 === 1 && n % 100 !== 11 ? "call.cushion_1" : few ? "call.cushion_few" : "call.cushion_many", { n }));
  }
  if (call.contacts && call.contacts.length) parts.push(t("call.combination"));
  return parts.join(" · ");
}

/** The panel's mode now: "call" while a call can be announced (before the shot); "over"
 * once the frame (or the match) is over, with no shot to report (issue 36: the panel still
 * offered "Shot result" after the match); else "result". */
export function panelMode(state) {
  if (state && Array.isArray(state.allowed) && state.allowed.includes("call")) return "call";
  return state && state.phase === ClockPhase.FRAME_OVER ? "over" : "result";
}

/** The i18n key of the console's result button: Call… / Call ✓… / Shot result… */
export function resultButtonLabel(state) {
  if (panelMode(state) !== "call") return "res.open";
  return state.announced_call ? "res.open_called" : "res.open_call";
}

/** A re-spot as the card says it, short enough to read at a glance: what goes where, and
 * its rule (the pill). The rest of the procedure (11.3 if the place is taken, 11.4 before
 * the next shot) is the same every time: it is in the full instruction, the card's title. */
export function respotText(r) {
  const where = t(r.ball === "colour" ? "respot.colour" : "respot.whites", { n: r.count });
  return t("respot.line", { where });
}

export function respotDetail(r) {
  if (lang !== "ru") return r.instruction;
  const what = r.ball === "colour" ? "цветной шар на заднюю отметку"
    : `белые (${r.count}) к середине заднего короткого борта, вплотную`;
  return `Выставить ${what} (${r.rule}); если место занято — как можно ближе по линии расстановки `
    + "(11.3); до следующего удара (11.4).";
}

export function contactLabel(contact) {
  return contact.split(">").map((b) => {
    const m = /^white(\d)$/.exec(b);
    return m ? `${t("ball.white")}${m[1]}` : t(`ball.${b}`);
  }).join("→");
}

function itemLabel(item) {
  return item.includes(">") ? contactLabel(item) : t(`cushion.${item}`);
}

// -- the table diagram ----------------------------------------------------------------------------
// Drawn 192 px wide (result.css .table-svg), 1 unit = 1.6 px: every pocket and cushion tap
// area is 28 units (44.8 px) across, a thumb's 44 px, and none overlaps another.
const SVG_NS = "http://www.w3.org/2000/svg";
const POCKET_XY = {
  top_left: [14, 14], top_right: [106, 14], middle_left: [14, 110], middle_right: [106, 110],
  bottom_left: [14, 206], bottom_right: [106, 206],
};
const POCKET_HIT_R = 14;
// x, y, w, h of each cushion's tap band (much wider than it looks, for a thumb).
const CUSHION_BOX = {
  top: [28, 0, 64, 28], bottom: [28, 192, 64, 28],
  left_top: [0, 28, 28, 66], left_bottom: [0, 126, 28, 66],
  right_top: [92, 28, 28, 66], right_bottom: [92, 126, 28, 66],
};

function el(name, attrs) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

/** Draw a tappable table into `host`; returns update(pocket, cushionOrder) to mark taps. */
export function drawTable(host, { onPocket, onCushion }) {
  const svg = el("svg", { viewBox: "0 0 120 220", class: "table-svg", role: "group" });
  svg.append(el("rect", { x: 4, y: 4, width: 112, height: 212, rx: 8, class: "rail" }));
  svg.append(el("rect", { x: 16, y: 16, width: 88, height: 188, class: "cloth" }));
  svg.append(el("circle", { cx: 60, cy: 160, r: 2.2, class: "spot" })); // back spot (11.1)
  const labels = {};
  for (const [name, [x, y, w, h]] of Object.entries(CUSHION_BOX)) {
    const g = el("g", { class: "cushion", "data-cushion": name, tabindex: "0" });
    g.append(el("rect", { x, y, width: w, height: h, class: "hit" }));
    const vertical = h > w;
    g.append(el("rect", vertical
      ? { x: name.startsWith("left") ? 10 : 104, y: y + 2, width: 6, height: h - 4, class: "band" }
      : { x: x + 2, y: name === "top" ? 10 : 204, width: w - 4, height: 6, class: "band" }));
    const label = el("text", { x: x + w / 2, y: y + h / 2 + 4, class: "order" });
    g.append(label);
    labels[name] = label;
    g.addEventListener("click", () => onCushion(name));
    svg.append(g);
  }
  const pockets = {};
  for (const [name, [cx, cy]] of Object.entries(POCKET_XY)) {
    const g = el("g", { class: "pocket", "data-pocket": name, tabindex: "0" });
    g.append(el("circle", { cx, cy, r: POCKET_HIT_R, class: "hit" }));
    g.append(el("circle", { cx, cy, r: 7, class: "hole" }));
    g.addEventListener("click", () => onPocket(name));
    pockets[name] = g;
    svg.append(g);
  }
  host.replaceChildren(svg);
  return (pocket, cushions) => {
    for (const [name, g] of Object.entries(pockets)) g.classList.toggle("on", name === pocket);
    for (const [name, label] of Object.entries(labels)) {
      const order = cushions.map((c, i) => (c === name ? i + 1 : null)).filter((n) => n);
      label.textContent = order.join(",");
      label.parentNode.classList.toggle("on", order.length > 0);
    }
  };
}

// -- the report -----------------------------------------------------------------------------------
export function emptyReport() {
  return {
    whites: 0, colour: false, called: false, legalBreak: true,
    foul: "", foulBalls: "colour", foulWith: "", foulText: "", // a general foul's code (D10)
    call: { pocket: null, cushions: [], contacts: [], shot_type: "normal" },
    route: { pocket: null, path: [], cue_ball: "white", unannounced_contact: false,
      jaw_before_drop: false },
  };
}

/** Route = call: the called pocket (if the ball dropped), contacts first, then cushions.
 * `call` is the announced one (7.1) or, without it, the one given in the report. */
export function routeFromCall(report, call = report.call) {
  const cueIsColour = call.contacts.length > 0 && call.contacts[0].startsWith("colour>");
  return {
    ...report.route,
    pocket: report.colour ? call.pocket : null,
    path: [...call.contacts, ...call.cushions],
    cue_ball: cueIsColour ? "colour" : "white",
  };
}

/**
 * The JSON body of the `result` command for a report (without "command"), or
 * {error: i18n key} when something the report needs is missing.
 */
export function buildResult(report, onBreak, announced = null) {
  const body = { whites_potted: report.whites, colour_potted: report.colour };
  if (onBreak) body.legal_break = report.legalBreak; // always said on the break (4.2, D11)
  const code = report.foul || (report.foulText.trim() ? "other" : "");
  if (code) {
    const foul = generalFoul(code, { balls: report.foulBalls, touchedWith: report.foulWith,
      text: report.foulText });
    if (!foul) return { error: "res.need_foul_text" };
    body.referee_foul = foul;
  }
  if (onBreak) return { body }; // no call on the break (4.4): the coloured ball drops by chance
  // An announced call (7.1) is the server's already: the result gives only the route.
  const called = report.called && !announced;
  if (called) {
    if (!report.call.pocket) return { error: "res.need_call_pocket" };
    body.call = { pocket: report.call.pocket, cushions: [...report.call.cushions],
      contacts: [...report.call.contacts], shot_type: report.call.shot_type };
  }
  const route = report.route;
  if (report.colour && !route.pocket && (called || announced)) return { error: "res.need_pocket" };
  if (called || announced || (report.colour && route.pocket)) {
    body.route = { pocket: report.colour ? route.pocket : null, path: [...route.path],
      cue_ball: route.cue_ball, unannounced_contact: route.unannounced_contact,
      jaw_before_drop: route.jaw_before_drop };
  }
  return { body };
}

/** Lines of the summary card for a `shot.result` event and the events after it. */
/** A match's score in the winner's favour ("2–0" for the winner, whichever side won;
 * issue 23: "Winner: Petrov-Vodkin, 0–2" read as the loser's score first). */
/** The match's score in the one order of every page (issue 36): the left player's (A)
 * first, whoever won; the winner is named beside it. */
export function winnerScore(m) {
  return `${m.score[0]}–${m.score[1]}`;
}

export function summaryLines(summary, players) {
  const lines = [];
  const o = summary.outcome;
  const name = (i) => (i == null ? "–" : players[i]);
  if (o.whites_credited) lines.push({ kind: "ok", text: t("res.whites_credited", { n: o.whites_credited }) });
  else if (!o.fouls.length && !o.frame_over) lines.push({ kind: "", text: t("res.no_whites") });
  for (const foul of o.fouls) {
    lines.push({ kind: "foul", text: `${t("res.foul", { name: name(foul.player) })}: ${foulText(foul)}`,
      rule: foul.rule });
  }
  for (const r of summary.respots || o.respots || []) {
    lines.push({ kind: "respot", text: respotText(r), rule: r.rule, title: respotDetail(r) });
  }
  if (o.frame_over) {
    const reason = t(`end.${o.end_reason}`);
    lines.push({ kind: "end", text: o.winner == null ? t("res.frame_end_none", { reason })
      : t("res.frame_end", { name: name(o.winner), reason }), rule: o.end_rule });
  } else if (o.choice_for != null) { // the chooser is at the table: one line says both
    lines.push({ kind: "turn", text: t("res.choice", { name: name(o.choice_for) }), rule: "10.4" });
  } else if (o.turn === "stays") {
    lines.push({ kind: "turn", text: t("res.turn_stays", { name: name(o.next_player) }) });
  } else if (o.turn === "passes") {
    lines.push({ kind: "turn", text: t("res.turn_passes", { name: name(o.next_player) }) });
  }
  if (summary.match) {
    const m = summary.match;
    lines.push({ kind: "end", text: t("res.match_end", { name: name(m.winner),
      score: winnerScore(m) }) });
  }
  if (o.call && o.call_timing) { // the call judged: announced before the shot or recorded after
    const verdict = o.call_verdict;
    let text = t(`res.call_timing.${o.call_timing}`, { call: callText(o.call) });
    if (verdict) text += ` ${verdict.fulfilled ? "✓" : `✗ ${t("res.call_failed")}`}`;
    lines.push({ kind: "", text, rule: verdict ? verdict.rule || "7.3" : "7.1" });
  }
  return lines; // (the whites credited so far are on the board)
}

export { itemLabel };

// -- the panel ------------------------------------------------------------------------------------
const PANEL = `
<h2 id="res-title"><span id="res-title-text" data-i18n="res.title"></span> <span id="res-shooter" class="muted"></span>
  <span id="res-break-badge" class="badge hidden" data-i18n="res.break"></span></h2>
<div id="res-announced" class="announced hidden"><span id="res-announced-label" class="res-label"></span>
  <b id="res-announced-call" class="seq"></b></div>
<p id="res-call-hint" class="help hidden" data-i18n="res.call_hint"></p>
<p id="res-over-help" class="help hidden"></p>
<div class="res-main" id="res-main">
  <div class="whites-group">
    <span class="res-label" data-i18n="res.whites"></span>
    <div class="stepper">
      <button id="res-whites-minus" type="button" class="step" aria-label="-">−</button>
      <output id="res-whites" class="digits">0</output>
      <button id="res-whites-plus" type="button" class="step" aria-label="+">+</button>
    </div>
  </div>
  <div class="toggles">
    <button id="res-colour" type="button" class="toggle colour" aria-pressed="false" data-i18n="res.colour"></button>
    <button id="res-called" type="button" class="toggle" aria-pressed="false" data-i18n="res.called"></button>
  </div>
</div>
<div class="res-row" id="res-break-row">
  <span class="res-label" data-i18n="res.legal_break"></span>
  <div class="seg break-choice">
    <button id="res-break-yes" type="button" aria-pressed="true"><span data-i18n="res.break_legal"></span>
      <small class="default" data-i18n="res.default"></small></button>
    <button id="res-break-no" type="button" aria-pressed="false" data-i18n="res.break_illegal"></button>
  </div>
</div>
<div class="res-row foul-row" id="res-foul-row">
  <label class="res-label" for="res-foul" data-i18n="res.foul_seen"></label>
  <select id="res-foul">
    <option value="" data-i18n="res.foul_none"></option>
    <option value="double_hit" data-i18n="foul.code.double_hit"></option>
    <option value="push_shot" data-i18n="foul.code.push_shot"></option>
    <option value="no_ball_contact" data-i18n="foul.code.no_ball_contact"></option>
    <option value="touched_ball" data-i18n="foul.code.touched_ball"></option>
    <option value="ball_off_table" data-i18n="foul.code.ball_off_table"></option>
    <option value="other" data-i18n="foul.code.other"></option>
  </select>
  <select id="res-foul-balls" class="hidden" aria-label="balls">
    <option value="colour" data-i18n="foul.balls.colour"></option>
    <option value="white" data-i18n="foul.balls.white"></option>
    <option value="white2" data-i18n="foul.balls.white2"></option>
    <option value="colour_white" data-i18n="foul.balls.colour_white"></option>
  </select>
  <select id="res-foul-with" class="hidden" aria-label="with">
    <option value="" data-i18n="foul.with.none"></option>
    <option value="hand" data-i18n="foul.with.hand"></option>
    <option value="cue" data-i18n="foul.with.cue"></option>
    <option value="clothing" data-i18n="foul.with.clothing"></option>
  </select>
  <input id="res-foul-text" maxlength="200" autocomplete="off" data-i18n-placeholder="res.foul_text">
</div>
<div id="res-editors" class="res-editors hidden">
  <div class="res-row editor-tabs">
    <div class="seg" id="res-tabs">
      <button type="button" data-tab="call" aria-pressed="true" data-i18n="res.call"></button>
      <button type="button" data-tab="route" aria-pressed="false" data-i18n="res.route_tab"></button>
    </div>
    <button id="route-copy" type="button" class="copy" data-i18n="res.route_copy"></button>
  </div>
  <fieldset id="res-call" class="editor">
    <legend data-i18n="res.call"></legend>
    <div class="editor-body">
      <div class="table-pick" id="call-table"></div>
      <div class="editor-side">
        <div class="seq-line"><span class="seq-label" data-i18n="res.pocket"></span> <b id="call-pocket" class="seq">–</b></div>
        <div class="seq-line"><span class="seq-label" data-i18n="res.cushions"></span> <b id="call-cushions" class="seq">–</b>
          <button id="call-cushion-undo" type="button" class="mini" data-i18n="res.undo_tap"></button></div>
        <div class="seq-line"><span class="seq-label" data-i18n="res.contacts"></span> <b id="call-contacts" class="seq">–</b>
          <button id="call-contact-undo" type="button" class="mini" data-i18n="res.undo_tap"></button></div>
        <div class="contacts" id="call-contact-buttons"></div>
        <div class="seg three" id="call-type">
          <button type="button" data-type="normal" aria-pressed="true" data-i18n="res.type.normal"></button>
          <button type="button" data-type="early_cushion" aria-pressed="false" data-i18n="res.type.early_cushion"></button>
          <button type="button" data-type="early_combination" aria-pressed="false" data-i18n="res.type.early_combination"></button>
        </div>
      </div>
    </div>
  </fieldset>
  <fieldset id="res-route" class="editor hidden">
    <legend data-i18n="res.route"></legend>
    <div class="editor-body">
      <div class="table-pick" id="route-table"></div>
      <div class="editor-side">
        <div class="seq-line"><span class="seq-label" data-i18n="res.dropped"></span> <b id="route-pocket" class="seq">–</b></div>
        <div class="seq-line"><span class="seq-label" data-i18n="res.path"></span> <b id="route-path" class="seq">–</b>
          <button id="route-undo" type="button" class="mini" data-i18n="res.undo_tap"></button>
          <button id="route-clear" type="button" class="mini" data-i18n="res.clear"></button></div>
        <div class="contacts" id="route-contact-buttons"></div>
        <div class="res-row">
          <span class="res-label" data-i18n="res.cue_ball"></span>
          <div class="seg" id="route-cue">
            <button type="button" data-cue="white" aria-pressed="true" data-i18n="res.cue.white"></button>
            <button type="button" data-cue="colour" aria-pressed="false" data-i18n="res.cue.colour"></button>
          </div>
        </div>
        <label class="check"><input type="checkbox" id="route-unannounced"> <span data-i18n="res.unannounced"></span></label>
        <label class="check"><input type="checkbox" id="route-jaw"> <span data-i18n="res.jaw"></span></label>
      </div>
    </div>
  </fieldset>
</div>
<div class="res-actions">
  <button id="res-cancel" type="button" class="btn minor" data-i18n="res.clear_report"></button>
  <button id="res-send" type="button" class="btn send" data-i18n="res.send"></button>
  <button id="res-announce" type="button" class="btn send hidden" data-i18n="res.announce"></button>
</div>`;

const CONFIRM = `
<form method="dialog">
  <h2 id="result-title" data-i18n="res.confirm_title"></h2>
  <ul id="result-warning" class="danger hidden"></ul>
  <p id="result-question" class="help"></p>
  <div class="dialog-buttons">
    <button value="cancel" data-i18n="btn.back"></button>
    <button value="ok" class="primary" id="result-ok" data-i18n="res.send"></button>
  </div>
</form>`;

function setPressed(button, on) {
  button.setAttribute("aria-pressed", on ? "true" : "false");
}

function seqText(items, label) {
  return items.length ? items.map(label).join(" · ") : "–";
}

/** Build the result panel into `host` and wire it; see the top of this module. */
export function mountResultPanel(host, page) {
  host.innerHTML = PANEL;
  const dialog = document.createElement("dialog");
  dialog.id = "result-dialog";
  dialog.innerHTML = CONFIRM;
  document.body.append(dialog);
  applyI18n(host);
  applyI18n(dialog);
  const $ = (id) => document.getElementById(id);
  let report = emptyReport();
  let tab = "call";
  let pending = null;

  const updateCallTable = drawTable($("call-table"), {
    onPocket: (p) => { report.call.pocket = report.call.pocket === p ? null : p; redraw(); },
    onCushion: (c) => { report.call.cushions.push(c); redraw(); },
  });
  const updateRouteTable = drawTable($("route-table"), {
    onPocket: (p) => {
      report.route.pocket = report.route.pocket === p ? null : p;
      if (report.route.pocket) report.colour = true;
      redraw();
    },
    onCushion: (c) => { report.route.path.push(c); redraw(); },
  });

  function contactButtons(box, onTap) {
    box.replaceChildren(...CONTACTS.map((c) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "contact";
      b.dataset.contact = c;
      b.addEventListener("click", () => onTap(c));
      return b;
    }));
  }
  contactButtons($("call-contact-buttons"), (c) => { report.call.contacts.push(c); redraw(); });
  contactButtons($("route-contact-buttons"), (c) => { report.route.path.push(c); redraw(); });

  function redraw() {
    const state = page.state();
    const onBreak = Boolean(state && state.on_break);
    const mode = panelMode(state);
    const announced = (state && state.announced_call) || null;
    host.dataset.mode = mode;
    const matchOver = Boolean(state && state.match && state.match.over);
    $("res-shooter").textContent = state && mode !== "over" ? `— ${state.players[state.player]}` : "";
    const title = mode === "call" ? "res.call_title" : mode === "over"
      ? (matchOver ? "res.match_over_title" : "res.frame_over_title") : "res.title";
    $("res-title-text").dataset.i18n = title;
    $("res-title-text").textContent = t(title);
    $("res-over-help").classList.toggle("hidden", mode !== "over");
    $("res-over-help").textContent = mode === "over" ? t(matchOver ? "res.match_over_help" : "res.over_help") : "";
    // The announced call (7.1): shown in both modes; in the result it is what is judged.
    $("res-announced").classList.toggle("hidden", !announced && mode !== "call");
    $("res-announced-label").textContent = t(announced ? "res.announced" : "res.announced_none");
    $("res-announced-call").textContent = announced ? callText(announced) : "";
    $("res-call-hint").classList.toggle("hidden", mode !== "call");
    for (const id of ["res-main", "res-break-row", "res-foul-row", "res-send"]) {
      $(id).classList.toggle("mode-hidden", mode === "call");
    }
    $("res-announce").classList.toggle("hidden", mode !== "call");
    if (mode === "call") tab = "call";
    $("res-break-badge").classList.toggle("hidden", !onBreak);
    $("res-whites").textContent = String(report.whites);
    $("res-whites-minus").disabled = report.whites <= 0;
    $("res-whites-plus").disabled = report.whites >= 7;
    setPressed($("res-colour"), report.colour);
    setPressed($("res-called"), report.called);
    $("res-called").classList.toggle("hidden", onBreak || Boolean(announced));
    $("res-break-row").classList.toggle("hidden", !onBreak);
    setPressed($("res-break-yes"), report.legalBreak);
    setPressed($("res-break-no"), !report.legalBreak);
    $("res-foul-text").classList.toggle("hidden", $("res-foul").value !== "other" && !report.foulText);
    $("res-foul-balls").classList.toggle("hidden", report.foul !== "ball_off_table");
    $("res-foul-with").classList.toggle("hidden", report.foul !== "touched_ball");

    // The call and the route share the space: one editor at a time (Call | Route). Before
    // the shot only the call; after it, with an announced call, only the route.
    const callEditable = mode === "call" || (report.called && !announced);
    const showEditors = mode === "call" || (!onBreak && (report.colour || report.called || announced));
    if (!callEditable && tab === "call") tab = "route";
    $("res-editors").classList.toggle("hidden", !showEditors);
    $("res-tabs").parentNode.classList.toggle("hidden", mode === "call");
    for (const b of $("res-tabs").querySelectorAll("button")) {
      setPressed(b, b.dataset.tab === tab);
      if (b.dataset.tab === "call") b.disabled = !callEditable;
    }
    $("res-call").classList.toggle("hidden", tab !== "call");
    $("res-route").classList.toggle("hidden", tab !== "route");
    $("route-copy").disabled = !report.called && !announced;
    $("call-pocket").textContent = report.call.pocket ? t(`pocket.${report.call.pocket}`) : "–";
    $("call-cushions").textContent = seqText(report.call.cushions, (c) => t(`cushion.${c}`));
    $("call-contacts").textContent = seqText(report.call.contacts, contactLabel);
    $("call-cushion-undo").disabled = !report.call.cushions.length;
    $("call-contact-undo").disabled = !report.call.contacts.length;
    for (const b of $("call-type").querySelectorAll("button")) {
      setPressed(b, b.dataset.type === report.call.shot_type);
    }
    updateCallTable(report.call.pocket, report.call.cushions);
    $("route-pocket").textContent = report.route.pocket ? t(`pocket.${report.route.pocket}`) : "–";
    $("route-path").textContent = seqText(report.route.path, itemLabel);
    $("route-undo").disabled = !report.route.path.length;
    $("route-clear").disabled = !report.route.path.length && !report.route.pocket;
    for (const b of $("route-cue").querySelectorAll("button")) {
      setPressed(b, b.dataset.cue === report.route.cue_ball);
    }
    $("route-unannounced").checked = report.route.unannounced_contact;
    $("route-jaw").checked = report.route.jaw_before_drop;
    updateRouteTable(report.route.pocket, report.route.path.filter((i) => !i.includes(">")));
    // Striker over "→ struck": two short lines fit a narrow button in both languages.
    for (const b of host.querySelectorAll(".contact")) {
      b.textContent = contactLabel(b.dataset.contact).replace("→", "\n→");
    }
    // Not the time for a result (the clock runs, time ran out ...): Send says why instead.
    const why = whyNotResult(state);
    if (why) $("res-send").setAttribute("aria-disabled", "true");
    else $("res-send").removeAttribute("aria-disabled");
    host.classList.toggle("not-now", mode === "result" && Boolean(why));
  }

  function whyNotResult(state) {
    if (!state || !Array.isArray(state.allowed) || state.allowed.includes("result")) return null;
    return (state.refused && state.refused.result) || { code: "not_allowed" };
  }

  function reset() {
    report = emptyReport();
    tab = "call";
    $("res-foul").value = "";
    $("res-foul-balls").value = "colour";
    $("res-foul-with").value = "";
    $("res-foul-text").value = "";
    redraw();
  }

  $("res-whites-minus").addEventListener("click", () => {
    report.whites = Math.max(0, report.whites - 1); redraw();
  });
  $("res-whites-plus").addEventListener("click", () => {
    report.whites = Math.min(7, report.whites + 1); redraw();
  });
  $("res-colour").addEventListener("click", () => {
    report.colour = !report.colour;
    if (!report.colour) { report.route.pocket = null; report.route.jaw_before_drop = false; }
    redraw();
  });
  $("res-called").addEventListener("click", () => {
    report.called = !report.called;
    if (report.called) tab = "call";
    redraw();
  });
  $("res-break-yes").addEventListener("click", () => { report.legalBreak = true; redraw(); });
  $("res-break-no").addEventListener("click", () => { report.legalBreak = false; redraw(); });
  $("res-foul").addEventListener("change", () => { report.foul = $("res-foul").value; redraw(); });
  $("res-foul-balls").addEventListener("change", () => { report.foulBalls = $("res-foul-balls").value; });
  $("res-foul-with").addEventListener("change", () => { report.foulWith = $("res-foul-with").value; });
  $("res-foul-text").addEventListener("input", () => { report.foulText = $("res-foul-text").value; });
  for (const b of $("res-tabs").querySelectorAll("button")) {
    b.addEventListener("click", () => { tab = b.dataset.tab; redraw(); });
  }
  $("call-cushion-undo").addEventListener("click", () => { report.call.cushions.pop(); redraw(); });
  $("call-contact-undo").addEventListener("click", () => { report.call.contacts.pop(); redraw(); });
  for (const b of $("call-type").querySelectorAll("button")) {
    b.addEventListener("click", () => { report.call.shot_type = b.dataset.type; redraw(); });
  }
  $("route-copy").addEventListener("click", () => {
    // Copying the call is what a pressed "call" means: the announced ball was aimed at its pocket.
    const state = page.state();
    const announced = state && state.announced_call;
    if (announced) {
      report.colour = true;
    } else {
      report.called = true;
    }
    report.route = routeFromCall(report, announced || report.call);
    tab = "route";
    redraw();
  });
  $("route-undo").addEventListener("click", () => { report.route.path.pop(); redraw(); });
  $("route-clear").addEventListener("click", () => {
    report.route.path = []; report.route.pocket = null; redraw();
  });
  for (const b of $("route-cue").querySelectorAll("button")) {
    b.addEventListener("click", () => { report.route.cue_ball = b.dataset.cue; redraw(); });
  }
  $("route-unannounced").addEventListener("change", (ev) => {
    report.route.unannounced_contact = ev.target.checked;
  });
  $("route-jaw").addEventListener("change", (ev) => { report.route.jaw_before_drop = ev.target.checked; });
  $("res-cancel").addEventListener("click", () => { reset(); api.close(); });

  $("res-send").addEventListener("click", async () => {
    const state = page.state();
    if (!state) return;
    const why = whyNotResult(state);
    if (why && !page.busy()) {
      page.showWhy(why);
      return;
    }
    const built = buildResult(report, Boolean(state.on_break), state.announced_call || null);
    if (built.error) {
      page.showError({ key: built.error });
      return;
    }
    pending = built.body;
    // What the rules will make of it (the service's own verdict on a copy of the table):
    // a foul or a technical loss is said before it is sent (issue 23, e.g. 6.2).
    const warning = await verdict(state, built.body);
    if (pending !== built.body) return; // cleared or sent meanwhile
    // A coloured-ball pot (it may end the frame) or a result that loses the frame (10.5):
    // ask, as for new frame and undo, saying what the rules make of it. A plain foul is
    // sent at once, as before (its card says it); inside a confirmation it is named.
    if ((built.body.colour_potted && !state.on_break) || (warning && warning.loss)) {
      const list = $("result-warning");
      list.replaceChildren(...(warning ? warning.lines : []).map((text) => {
        const li = document.createElement("li");
        li.textContent = text;
        return li;
      }));
      list.classList.toggle("hidden", !warning);
      $("result-title").textContent = t(warning ? warning.title : "res.confirm_title");
      $("result-question").textContent = describeResult(built.body, state.announced_call);
      dialog.showModal();
      return;
    }
    sendResult();
  });

  /** The foul or loss a result would be, from POST /preview: {title, lines}, or null (no
   * foul, or the preview is not available: an older service, no connection). */
  async function verdict(state, body) {
    const table = state.table;
    if (!table) return null;
    const answer = await requestJson("POST", `/api/tables/${encodeURIComponent(table)}/preview`,
      { command: "result", source: "web", ...body });
    if (!answer.ok || !answer.body || !Array.isArray(answer.body.events)) return null;
    const who = (i) => (i == null ? "–" : state.players[i]);
    const lines = [];
    let loss = false;
    for (const e of answer.body.events) {
      const d = e.data || {};
      if (e.type === "foul") {
        lines.push(t("res.warn_foul", { name: who(d.player), foul: foulText(d) }));
        if (d.technical_loss) {
          loss = true;
          lines.push(t("res.warn_loss", { name: who(d.player), other: who(1 - d.player) }));
        }
      }
    }
    if (!lines.length) return null;
    return { title: loss ? "res.warn_loss_title" : "res.warn_title", lines, loss };
  }
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "ok") sendResult();
    else pending = null;
  });

  // Before the shot: announce the call (7.1, the `call` command); a new one replaces it.
  $("res-announce").addEventListener("click", async () => {
    const state = page.state();
    if (!state) return;
    if (!report.call.pocket) {
      page.showError({ key: "res.need_call_pocket" });
      return;
    }
    const result = await page.send("call", { pocket: report.call.pocket,
      cushions: [...report.call.cushions], contacts: [...report.call.contacts],
      shot_type: report.call.shot_type });
    if (result && result.ok) page.sent(state.seq);
  });

  async function sendResult() {
    const body = pending;
    pending = null;
    if (!body) return;
    const state = page.state();
    const before = state ? state.seq : 0;
    const result = await page.send("result", body);
    if (!result || !result.ok) return; // the console says why; the report stays for a fix
    reset();
    page.sent(before);
  }

  onLangChange(redraw);
  const api = {
    open() {
      // Before the shot the editor starts from the call announced so far (to change it).
      const state = page.state();
      if (panelMode(state) === "call" && state.announced_call) {
        const c = state.announced_call;
        report.call = { pocket: c.pocket, cushions: [...c.cushions], contacts: [...c.contacts],
          shot_type: c.shot_type };
      }
      host.classList.remove("hidden");
      host.classList.add("open");
      redraw();
    },
    close() { host.classList.remove("open"); host.classList.add("hidden"); },
    isOpen() { return host.classList.contains("open"); },
    redraw,
  };
  redraw();
  return api;
}

function describeResult(body, announced) {
  const parts = [`${t("res.whites")}: ${body.whites_potted}`];
  if (body.colour_potted) parts.push(t("res.colour"));
  const call = body.call || announced;
  if (call) parts.push(`${t(announced ? "res.announced" : "res.call")}: ${callText(call)}`);
  else parts.push(`${t("res.call")}: –`);
  if (body.referee_foul) {
    const foul = body.referee_foul;
    parts.push(`${t("res.foul_seen")}: ${foul.code === "other" ? foul.text : t(`foul.code.${foul.code}`)}`);
  }
  return parts.join(" · ");
}
