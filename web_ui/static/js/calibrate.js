// The camera's calibration page: what the detector sees, live (issue 21 point 3b: the
// frame with each ball's outline, the count, the felt mask on request), four clicks on the
// bed's corners, saved with PUT /api/camera/calibration (referee token). Issue 15.
//
// The image is GET /api/camera/view.jpg: made by the service off its event loop, at most 4
// new images a second for all clients together. The page asks for the next one when the
// last has arrived and VIEW_EVERY_MS have passed (about 3 a second), never two at once,
// and not while the page is hidden.

import { requestJson } from "./api.js";
import { addStrings, applyI18n, bindLangToggle, errorText, lang, onLangChange, t } from "./i18n.js";

addStrings({
  en: {
    "cal.title": "Camera: the table's corners",
    "cal.help": "Click the four corners of the playing area inside the cushions, going round the table. Then save.",
    "cal.reset": "Start again", "cal.save": "Save", "cal.saved": "Saved: the camera uses it from the next frame.",
    "cal.clicked": "Corners: {n} of 4",
    "cal.felt": "Felt mask",
    "cal.legend": "Magenta rings: white balls found; orange: the coloured ball; red: the bed\u2019s edge; dark grey (felt mask): what the camera takes for cloth.",
    "cal.balls.one": "{n} ball found", "cal.balls.many": "{n} balls found",
    "cal.ready": "Ready: {balls}",
    "cal.not_ready": "Not ready: {why}",
    "cal.why.uncalibrated": "click the table's four corners and save",
    "cal.why.no_frames": "the camera gives no frames",
    "cal.why.not_sure": "the camera is not sure what it sees",
    "cal.why.no_balls": "no balls found: check the corners and the light",
    "cal.ended": "(the video has ended: last frame)",
    "cal.learned": "It learned the balls' and the cloth's look from {n} balls.",
  },
  ru: {
    "cal.title": "Камера: углы стола",
    "cal.help": "Отметьте четыре угла игрового поля внутри бортов, по кругу. Затем сохраните.",
    "cal.reset": "Заново", "cal.save": "Сохранить", "cal.saved": "Сохранено: камера применит со следующего кадра.",
    "cal.clicked": "Углов: {n} из 4",
    "cal.felt": "Маска сукна",
    "cal.legend": "Малиновые кольца: найденные белые шары; оранжевое: цветной шар; красная линия: край поля; тёмно-серое (маска сукна): то, что камера считает сукном.",
    "cal.balls.one": "найден {n} шар", "cal.balls.few": "найдено {n} шара", "cal.balls.many": "найдено {n} шаров",
    "cal.ready": "Готово: {balls}",
    "cal.not_ready": "Не готово: {why}",
    "cal.why.uncalibrated": "отметьте четыре угла стола и сохраните",
    "cal.why.no_frames": "камера не даёт кадров",
    "cal.why.not_sure": "камера не уверена в том, что видит",
    "cal.why.no_balls": "шары не найдены: проверьте углы и свет",
    "cal.ended": "(видео закончилось: последний кадр)",
    "cal.learned": "Вид шаров и сукна изучен по {n} шарам.",
  },
});
applyI18n();
bindLangToggle(document.getElementById("lang"));

const VIEW_EVERY_MS = 330;
const STATUS_EVERY_MS = 1000;
// A request unanswered this long is given up and asked again (a lost answer on the hall's
// Wi-Fi would otherwise stop the live view for good); an 800 px image is some 60 KB.
const ANSWER_WITHIN_MS = 10000;
const LOAD_AGAIN_MS = 2000; // the camera's status could not be read: asked again after

const img = document.getElementById("frame");
const canvas = document.getElementById("marks");
const msg = document.getElementById("msg");
const ready = document.getElementById("ready");
const save = document.getElementById("save");
const feltButton = document.getElementById("felt");
let corners = [];
let frameSize = null; // [w, h] of the camera's frame: corners are in its pixels
let savedCal = null;
let felt = false;
let balls = null; // the count in the image shown
let status = null; // GET /api/camera
let shownUrl = null;

/** "8 balls found" with the language's plural ("найдено 8 шаров"). */
function ballsText(n) {
  let form = n === 1 ? "one" : "many";
  if (lang === "ru") {
    const d = n % 10;
    const dd = n % 100;
    form = d === 1 && dd !== 11 ? "one" : d >= 2 && d <= 4 && (dd < 12 || dd > 14) ? "few" : "many";
  }
  return t(`cal.balls.${form}`, { n });
}

function showReady() {
  if (!status) return;
  let why = null;
  if (!status.calibrated) why = "uncalibrated";
  else if (!status.connected && !status.ended) why = "no_frames";
  else if (!status.sure) why = "not_sure";
  else if (balls === 0) why = "no_balls";
  const text = why ? t("cal.not_ready", { why: t(`cal.why.${why}`) })
    : balls === null ? "" : t("cal.ready", { balls: ballsText(balls) });
  ready.textContent = status.ended && text ? `${text} ${t("cal.ended")}` : text;
  ready.dataset.state = why ? "not-ready" : balls === null ? "" : "ready";
  ready.dataset.balls = balls === null ? "" : String(balls);
}

function draw() {
  if (!frameSize) return;
  canvas.width = frameSize[0];
  canvas.height = frameSize[1];
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "#ff3030";
  ctx.fillStyle = "#ff3030";
  ctx.lineWidth = Math.max(2, canvas.width / 400);
  ctx.beginPath();
  corners.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  if (corners.length === 4) ctx.closePath();
  ctx.stroke();
  const s = Math.max(4, canvas.width / 160);
  for (const [x, y] of corners) ctx.fillRect(x - s, y - s, 2 * s, 2 * s);
  save.disabled = corners.length !== 4;
  msg.textContent = t("cal.clicked", { n: corners.length });
}

async function refreshView() {
  if (document.visibilityState !== "hidden") {
    try {
      const asked = felt; // the image says what was asked for, even if the button moved since
      const response = await fetch(`/api/camera/view.jpg?felt=${asked ? 1 : 0}`,
        { cache: "no-store", signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
      if (response.ok) {
        const size = (response.headers.get("x-camera-size") || "").split("x").map(Number);
        const blob = await response.blob();
        const url = URL.createObjectURL(blob);
        await new Promise((resolve) => {
          img.onload = resolve;
          img.onerror = resolve;
          img.src = url;
        });
        if (shownUrl) URL.revokeObjectURL(shownUrl);
        shownUrl = url;
        balls = Number(response.headers.get("x-camera-balls"));
        img.dataset.frame = response.headers.get("x-camera-frame") || "";
        img.dataset.felt = asked ? "1" : "0";
        if (size.length === 2 && size[0] > 0 && (!frameSize || size[0] !== frameSize[0])) {
          const first = !frameSize;
          frameSize = size;
          if (first && savedCal && savedCal.frame_size[0] === size[0]) {
            corners = savedCal.corners.map((c) => [...c]);
          }
          draw();
        }
        showReady();
      } else if (response.status === 503 && !frameSize) {
        msg.textContent = errorText({ code: "no_frame" }).text;
      }
    } catch { /* the service restarts, or did not answer in time: the next round asks again */ }
  }
  setTimeout(refreshView, VIEW_EVERY_MS);
}

async function refreshStatus() {
  const result = await requestJson("GET", "/api/camera", undefined, { timeoutMs: ANSWER_WITHIN_MS });
  if (result.ok) {
    status = result.body;
    showReady();
  }
  setTimeout(refreshStatus, STATUS_EVERY_MS);
}

async function load() {
  const result = await requestJson("GET", "/api/camera", undefined, { timeoutMs: ANSWER_WITHIN_MS });
  if (!result.ok && result.status !== 404) {
    // Not an answer about the camera (no connection, no answer in time, a service busy or
    // restarting): said, and asked again; "no camera" would be wrong, and would stay.
    const error = result.status === 0 || !(result.body && result.body.error)
      ? { code: "camera_unreachable" } : result.body.error;
    msg.textContent = errorText(error).text;
    msg.dataset.code = error.code;
    setTimeout(load, LOAD_AGAIN_MS);
    return;
  }
  delete msg.dataset.code;
  if (!result.ok) {
    // No camera on this service: the camera's routes are not mounted, so the answer is a
    // plain 404 ("Not Found"); say what it means, in the page's language (issue 23).
    msg.textContent = errorText({ code: "no_camera" }).text;
    document.body.classList.add("no-camera");
    save.disabled = true;
    feltButton.disabled = true;
    return;
  }
  status = result.body;
  savedCal = status.calibration;
  refreshView();
  setTimeout(refreshStatus, STATUS_EVERY_MS);
}

canvas.addEventListener("click", (event) => {
  if (corners.length >= 4 || !frameSize) return;
  const box = canvas.getBoundingClientRect();
  corners.push([
    Math.round(((event.clientX - box.left) / box.width) * canvas.width * 10) / 10,
    Math.round(((event.clientY - box.top) / box.height) * canvas.height * 10) / 10,
  ]);
  draw();
});

document.getElementById("reset").addEventListener("click", () => { corners = []; draw(); });

feltButton.addEventListener("click", () => {
  felt = !felt;
  feltButton.setAttribute("aria-pressed", String(felt));
});

save.addEventListener("click", async () => {
  const result = await requestJson("PUT", "/api/camera/calibration",
    { corners, frame_size: frameSize });
  msg.textContent = !result.ok
    ? errorText((result.body && result.body.error) || { code: "error" }).text
    : result.body.learned
      ? `${t("cal.saved")} ${t("cal.learned", { n: result.body.calibration.appearance.balls })}`
      : `${t("cal.saved")} ${errorText(result.body.warning || { code: "appearance_not_learned" },
        result.body.warning && result.body.warning.vars).text}`;
  msg.dataset.learned = result.ok ? String(Boolean(result.body.learned)) : "";
  // learned now, kept from before (a save that could not learn), or none (issue 37)
  msg.dataset.appearance = result.ok ? String(result.body.appearance || "") : "";
  if (result.ok) {
    savedCal = result.body.calibration;
    status = { ...status, calibrated: true };
    showReady();
  }
});

onLangChange(() => { draw(); showReady(); });

load();
