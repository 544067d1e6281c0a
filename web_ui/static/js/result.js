// The referee's report of a shot (the `result` command) and the summary of what the rules
// made of it (the `shot.result` event, then `respot`, `frame.ended`, `match.ended`).
//
// Vocabulary as clock_service/rules/call.py: six pockets, six cushion segments, contacts
// "striker>struck" with the balls cue, colour, white1..white7.

import { addErrors, addStrings, lang, t } from "./i18n.js";

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
    "res.title": "Shot result",
    "res.break": "break",
    "res.whites": "Whites potted",
    "res.colour": "Coloured ball potted",
    "res.called": "Call announced",
    "res.legal_break": "Legal break",
    "res.yes": "Yes",
    "res.no": "No",
    "res.foul_seen": "Foul seen",
    "res.foul_none": "none",
    "res.foul_text": "or describe the foul",
    "res.call": "Call",
    "res.route": "Route (what happened)",
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
    "res.need_pocket": "Tap the pocket the coloured ball dropped into (route).",
    "res.need_call_pocket": "Tap the called pocket on the call diagram.",
    "res.sent": "result",
    "res.summary": "{name}: shot result",
    "res.whites_credited": "Whites credited: {n}",
    "res.no_whites": "No whites credited",
    "res.foul": "Foul — {name}",
    "step.result": "shot result",
    "res.turn_stays": "{name} stays at the table",
    "res.turn_passes": "The turn passes to {name}",
    "res.choice": "{name} chooses: play on (Start) or hand back (10.4)",
    "res.frame_end": "Frame over: {name} wins ({reason})",
    "res.frame_end_none": "Frame over ({reason})",
    "res.match_end": "Match over: {name} wins {score}",
    "res.whites_now": "Whites: {a} – {b}",
    "end.legal_colour_pot": "legal pot of the coloured ball",
    "end.technical_loss": "technical loss",
    "end.referee": "ended by the referee",
    "label.match": "Match",
    "label.race_to": "race to {n}",
    "pocket.top_left": "top left", "pocket.top_right": "top right",
    "pocket.middle_left": "middle left", "pocket.middle_right": "middle right",
    "pocket.bottom_left": "bottom left", "pocket.bottom_right": "bottom right",
    "cushion.top": "top", "cushion.bottom": "bottom", "cushion.left_top": "left upper",
    "cushion.left_bottom": "left lower", "cushion.right_top": "right upper",
    "cushion.right_bottom": "right lower",
    "ball.cue": "cue", "ball.colour": "colour", "ball.white": "W",
  },
  ru: {
    "res.open": "Результат удара…",
    "res.title": "Результат удара",
    "res.break": "разбой",
    "res.whites": "Забито белых",
    "res.colour": "Цветной забит",
    "res.called": "Был заказ",
    "res.legal_break": "Разбой правильный",
    "res.yes": "Да",
    "res.no": "Нет",
    "res.foul_seen": "Замечен фол",
    "res.foul_none": "нет",
    "res.foul_text": "или опишите фол",
    "res.call": "Заказ",
    "res.route": "Траектория (что было)",
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
    "res.need_pocket": "Отметьте лузу, в которую упал цветной (траектория).",
    "res.need_call_pocket": "Отметьте заказанную лузу на схеме заказа.",
    "res.sent": "результат",
    "res.summary": "{name}: результат удара",
    "res.whites_credited": "Засчитано белых: {n}",
    "res.no_whites": "Белые не засчитаны",
    "res.foul": "Фол — {name}",
    "step.result": "результат удара",
    "res.turn_stays": "{name} продолжает у стола",
    "res.turn_passes": "Ход переходит к {name}",
    "res.choice": "{name} выбирает: играть (Старт) или вернуть ход (10.4)",
    "res.frame_end": "Партия окончена: победа {name} ({reason})",
    "res.frame_end_none": "Партия окончена ({reason})",
    "res.match_end": "Матч окончен: победа {name} {score}",
    "res.whites_now": "Белые: {a} – {b}",
    "end.legal_colour_pot": "правильно забит цветной",
    "end.technical_loss": "техническое поражение",
    "end.referee": "решение судьи",
    "label.match": "Матч",
    "label.race_to": "до {n} побед",
    "pocket.top_left": "верхняя левая", "pocket.top_right": "верхняя правая",
    "pocket.middle_left": "средняя левая", "pocket.middle_right": "средняя правая",
    "pocket.bottom_left": "нижняя левая", "pocket.bottom_right": "нижняя правая",
    "cushion.top": "верхний", "cushion.bottom": "нижний", "cushion.left_top": "левый верхний",
    "cushion.left_bottom": "левый нижний", "cushion.right_top": "правый верхний",
    "cushion.right_bottom": "правый нижний",
    "ball.cue": "биток", "ball.colour": "цветной", "ball.white": "Б",
  },
});

addErrors({
  en: {
    clock_running: "the shot is still being timed: press Shot when it is played, then report its result",
    clock_paused: "the clock is paused: press Shot when the shot is played, then report its result",
  },
  ru: {
    clock_running: "удар ещё идёт по времени: нажмите «Удар», когда он сыгран, затем сообщите результат",
    clock_paused: "таймер на паузе: нажмите «Удар», когда удар сыгран, затем сообщите результат",
    result_after_expiry: "время удара вышло (фол по времени, 12.4): соперник сначала принимает (Старт) или возвращает ход",
    missing_legal_break: "это разбой: укажите, правильный ли он (4.2)",
    legal_break_after_break: "разбой уже сыгран: «правильный разбой» не указывается",
    call_on_break: "на разбое заказа нет: цветной может упасть только случайно (4.4)",
    too_many_whites: "белых забито больше, чем есть на столе",
    missing_route: "заказанный цветной забит: нужна траектория, чтобы проверить заказ (7.3)",
    route_contradicts_result: "луза траектории не согласуется с «цветной забит»",
    jaw_not_next_to_pocket: "касание губки: последним в пути должен быть борт у этой лузы (7.5)",
    jaw_without_drop: "касание губки отмечено, но цветной не упал",
    cue_is_colour: "битком был цветной: в касаниях пишется «цветной», не «биток» (8.5)",
    result_after_frame_end: "партия окончена: результаты больше не принимаются",
    match_over: "матч окончен: можно только отменить",
    choice_pending: "соперник должен сначала принять позицию или вернуть ход",
    bad_count: "неверное число шаров",
  },
});

// Russian for the fouls the rules find (the server words them in English); the rule number
// is the server's, unchanged. Unknown reasons show the server's text.
const FOUL_RU = [
  [/^illegal break/, "неправильный разбой (4.2)"],
  [/would exceed/, "больше трёх засчитанных белых (5.3)"],
  [/coloured ball potted without a call/, "цветной забит без заказа (6.3)"],
  [/a white and the coloured ball potted with the same shot/, "белый и цветной забиты одним ударом"],
  [/potted with \d+ whites credited/, "цветной забит до трёх белых без особого удара (6.1-6.2)"],
  [/^call not fulfilled/, "заказ не выполнен"],
  [/does not count and a ball was potted/, "незаявленное касание: удар не засчитан, шар забит"],
  [/^time/, "фол по времени"],
];

export function foulText(foul) {
  const reason = foul.reason || "";
  if (lang !== "ru") return reason;
  const parts = reason.split("; ").map((part) => {
    if (part.startsWith("general rule: ")) return `замечено судьёй: ${part.slice(14)}`;
    const hit = FOUL_RU.find(([re]) => re.test(part));
    return hit ? hit[1] : part;
  });
  return parts.join("; ");
}

export function respotText(r) {
  if (lang !== "ru") return r.instruction;
  const what = r.ball === "colour" ? "цветной шар на заднюю отметку"
    : `${r.count} бел. ${r.count === 1 ? "шар" : "шара(ов)"} к середине заднего короткого борта, вплотную`;
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
const SVG_NS = "http://www.w3.org/2000/svg";
const POCKET_XY = {
  top_left: [12, 12], top_right: [108, 12], middle_left: [8, 110], middle_right: [112, 110],
  bottom_left: [12, 208], bottom_right: [108, 208],
};
// x, y, w, h of each cushion's tap band (wider than it looks, for a thumb).
const CUSHION_BOX = {
  top: [26, 2, 68, 18], bottom: [26, 200, 68, 18],
  left_top: [2, 26, 18, 70], left_bottom: [2, 124, 18, 70],
  right_top: [100, 26, 18, 70], right_bottom: [100, 124, 18, 70],
};

function el(name, attrs) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

/** Draw a tappable table into `host`; returns update(pocket, cushionOrder) to mark taps. */
export function drawTable(host, { onPocket, onCushion }) {
  const svg = el("svg", { viewBox: "0 0 120 220", class: "table-svg", role: "group" });
  svg.append(el("rect", { x: 6, y: 6, width: 108, height: 208, rx: 8, class: "rail" }));
  svg.append(el("rect", { x: 16, y: 16, width: 88, height: 188, class: "cloth" }));
  svg.append(el("circle", { cx: 60, cy: 160, r: 2.2, class: "spot" })); // back spot (11.1)
  const labels = {};
  for (const [name, [x, y, w, h]] of Object.entries(CUSHION_BOX)) {
    const g = el("g", { class: "cushion", "data-cushion": name, tabindex: "0" });
    g.append(el("rect", { x, y, width: w, height: h, class: "hit" }));
    const vertical = h > w;
    g.append(el("rect", vertical
      ? { x: x + (name.startsWith("left") ? 11 : 1), y, width: 6, height: h, class: "band" }
      : { x, y: y + (name === "top" ? 11 : 1), width: w, height: 6, class: "band" }));
    const label = el("text", { x: x + w / 2, y: y + h / 2 + 3.5, class: "order" });
    g.append(label);
    labels[name] = label;
    g.addEventListener("click", () => onCushion(name));
    svg.append(g);
  }
  const pockets = {};
  for (const [name, [cx, cy]] of Object.entries(POCKET_XY)) {
    const g = el("g", { class: "pocket", "data-pocket": name, tabindex: "0" });
    g.append(el("circle", { cx, cy, r: 12, class: "hit" }));
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
    whites: 0, colour: false, called: false, legalBreak: true, foul: "", foulText: "",
    call: { pocket: null, cushions: [], contacts: [], shot_type: "normal" },
    route: { pocket: null, path: [], cue_ball: "white", unannounced_contact: false,
      jaw_before_drop: false },
  };
}

/** Route = call: the called pocket (if the ball dropped), contacts first, then cushions. */
export function routeFromCall(report) {
  const { call } = report;
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
export function buildResult(report, onBreak) {
  const body = { whites_potted: report.whites, colour_potted: report.colour };
  if (onBreak) body.legal_break = report.legalBreak;
  const foul = report.foulText.trim()
    || (report.foul ? t(`foul.r.${report.foul}`) : "");
  if (foul) body.referee_foul = foul.slice(0, 200);
  if (onBreak) return { body }; // no call on the break (4.4): the coloured ball drops by chance
  const called = report.called;
  if (called) {
    if (!report.call.pocket) return { error: "res.need_call_pocket" };
    body.call = { pocket: report.call.pocket, cushions: [...report.call.cushions],
      contacts: [...report.call.contacts], shot_type: report.call.shot_type };
  }
  const route = report.route;
  if (report.colour && !route.pocket && called) return { error: "res.need_pocket" };
  if (called || (report.colour && route.pocket)) {
    body.route = { pocket: report.colour ? route.pocket : null, path: [...route.path],
      cue_ball: route.cue_ball, unannounced_contact: route.unannounced_contact,
      jaw_before_drop: route.jaw_before_drop };
  }
  return { body };
}

/** Lines of the summary card for a `shot.result` event and the events after it. */
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
    lines.push({ kind: "respot", text: respotText(r), rule: r.rule });
  }
  if (o.frame_over) {
    const reason = t(`end.${o.end_reason}`);
    lines.push({ kind: "end", text: o.winner == null ? t("res.frame_end_none", { reason })
      : t("res.frame_end", { name: name(o.winner), reason }), rule: o.end_rule });
  } else if (o.choice_for != null) {
    lines.push({ kind: "turn", text: t("res.turn_passes", { name: name(o.next_player) }) });
    lines.push({ kind: "turn", text: t("res.choice", { name: name(o.choice_for) }), rule: "10.4" });
  } else if (o.turn === "stays") {
    lines.push({ kind: "turn", text: t("res.turn_stays", { name: name(o.next_player) }) });
  } else if (o.turn === "passes") {
    lines.push({ kind: "turn", text: t("res.turn_passes", { name: name(o.next_player) }) });
  }
  if (summary.match) {
    const m = summary.match;
    lines.push({ kind: "end", text: t("res.match_end", { name: name(m.winner),
      score: `${m.score[0]}–${m.score[1]}` }) });
  }
  if (Array.isArray(summary.whites)) {
    lines.push({ kind: "", text: t("res.whites_now", { a: summary.whites[0], b: summary.whites[1] }) });
  }
  return lines;
}

export { itemLabel };
