// The camera's calibration page: the latest frame, four clicks on the bed's corners, saved
// with PUT /api/camera/calibration (referee token). Issue 15.

import { requestJson } from "./api.js";
import { addStrings, applyI18n, errorText, t } from "./i18n.js";

addStrings({
  en: {
    "cal.title": "Camera: the table's corners",
    "cal.help": "Click the four corners of the playing area inside the cushions, going round the table. Then save.",
    "cal.reset": "Start again", "cal.save": "Save", "cal.saved": "Saved: the camera uses it from the next frame.",
    "cal.clicked": "Corners: {n} of 4",
  },
  ru: {
    "cal.title": "Камера: углы стола",
    "cal.help": "Отметьте четыре угла игрового поля внутри бортов, по кругу. Затем сохраните.",
    "cal.reset": "Заново", "cal.save": "Сохранить", "cal.saved": "Сохранено: камера применит со следующего кадра.",
    "cal.clicked": "Углов: {n} из 4",
  },
});
applyI18n();

const img = document.getElementById("frame");
const canvas = document.getElementById("marks");
const msg = document.getElementById("msg");
const save = document.getElementById("save");
let corners = [];

function draw() {
  canvas.width = img.naturalWidth || 1;
  canvas.height = img.naturalHeight || 1;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "#ff3030";
  ctx.fillStyle = "#ff3030";
  ctx.lineWidth = Math.max(2, canvas.width / 400);
  ctx.beginPath();
  corners.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  if (corners.length === 4) ctx.closePath();
  ctx.stroke();
  for (const [x, y] of corners) ctx.fillRect(x - 4, y - 4, 8, 8);
  save.disabled = corners.length !== 4;
  msg.textContent = t("cal.clicked", { n: corners.length });
}

async function load() {
  const status = await requestJson("GET", "/api/camera");
  if (!status.ok) {
    // No camera on this service: the camera's routes are not mounted, so the answer is a
    // plain 404 ("Not Found"); say what it means, in the page's language (issue 23).
    const error = status.status === 404 ? { code: "no_camera" }
      : (status.body && status.body.error) || { code: "no_camera" };
    msg.textContent = errorText(error).text;
    document.body.classList.add("no-camera");
    save.disabled = true;
    return;
  }
  const cal = status.body.calibration;
  img.onload = () => {
    if (cal && cal.frame_size[0] === img.naturalWidth) corners = cal.corners.map((c) => [...c]);
    draw();
  };
  img.onerror = () => { msg.textContent = errorText({ code: "no_frame" }).text; };
  img.src = `/api/camera/frame.jpg?t=${Date.now()}`;
}

canvas.addEventListener("click", (event) => {
  if (corners.length >= 4) return;
  const box = canvas.getBoundingClientRect();
  corners.push([
    Math.round(((event.clientX - box.left) / box.width) * canvas.width * 10) / 10,
    Math.round(((event.clientY - box.top) / box.height) * canvas.height * 10) / 10,
  ]);
  draw();
});

document.getElementById("reset").addEventListener("click", () => { corners = []; draw(); });

save.addEventListener("click", async () => {
  const result = await requestJson("PUT", "/api/camera/calibration",
    { corners, frame_size: [img.naturalWidth, img.naturalHeight] });
  msg.textContent = result.ok ? t("cal.saved")
    : errorText((result.body && result.body.error) || { code: "error" }).text;
});

load();
