// The camera's clips, frame by frame, beside the clock's times (issue 21 point 5).
//
// A clip is GET /api/camera/clips/<id>.json (its instant, kind, the clock's steps in its
// window, and each frame's capture time, offset and length) and <id>.mjpeg (the JPEG
// frames one after another). The page fetches the MJPEG once (about 0.6 MB) and shows
// each frame from its own slice of it: stepping never asks the service again. One clip is
// held at a time; its frames' object URLs are let go when another is opened or the
// viewer closes. The list asks for the newest LIST_LIMIT clips only.
//
// Used by the referee console (a dialog, "Back to the clock") and by /clips (the match
// record's link).

import { addStrings, decimal, t } from "./i18n.js";

const LIST_LIMIT = 30;

addStrings({
  en: {
    "clip.title": "Video", "clip.none": "No clips yet: the camera keeps one for every rest, strike and time foul.",
    "clip.off": "No clips on this service (no camera, or clips are off).",
    "clip.failed": "The clip could not be loaded.",
    "clip.kind.rest": "Balls at rest", "clip.kind.strike": "Strike", "clip.kind.time_foul": "Time foul",
    "clip.step.rest": "balls stopped", "clip.step.strike": "tip met the ball", "clip.step.time_foul": "time ran out",
    "clip.clock.started": "clock started", "clip.clock.stopped": "clock stopped",
    "clip.clock.expired": "time ran out (clock)", "clip.clock.paused": "clock paused",
    "clip.clock.resumed": "clock resumed",
    "clip.by.camera": "by the camera", "clip.by.referee": "by the referee",
    "clip.frame": "Frame {i} of {n}", "clip.prev": "Previous frame", "clip.next": "Next frame",
    "clip.play": "Play", "clip.pause": "Pause", "clip.back": "Back to the clock",
    "clip.list": "Clips", "clip.back_report": "Back to the protocol",
  },
  ru: {
    "clip.title": "Видео", "clip.none": "Записей пока нет: камера сохраняет каждую остановку шаров, удар и просрочку.",
    "clip.off": "На этом сервисе нет записей (нет камеры или запись выключена).",
    "clip.failed": "Запись не загрузилась.",
    "clip.kind.rest": "Шары остановились", "clip.kind.strike": "Удар", "clip.kind.time_foul": "Просрочка",
    "clip.step.rest": "шары остановились", "clip.step.strike": "наклейка коснулась шара", "clip.step.time_foul": "время вышло",
    "clip.clock.started": "часы пущены", "clip.clock.stopped": "часы остановлены",
    "clip.clock.expired": "время вышло (часы)", "clip.clock.paused": "часы на паузе",
    "clip.clock.resumed": "часы продолжены",
    "clip.by.camera": "камерой", "clip.by.referee": "судьёй",
    "clip.frame": "Кадр {i} из {n}", "clip.prev": "Предыдущий кадр", "clip.next": "Следующий кадр",
    "clip.play": "Пуск", "clip.pause": "Пауза", "clip.back": "Назад к часам",
    "clip.list": "Записи", "clip.back_report": "Назад к протоколу",
  },
});

const pad = (n, w = 2) => String(n).padStart(w, "0");

/** "12:04:31.20" (local time, hundredths) from unix ms. */
export function clockText(ms) {
  const d = new Date(Math.round(ms));
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(Math.floor(d.getMilliseconds() / 10))}`;
}

/** `ms` as said after `anchor`: ".23" in the same second, ":32.10" in the same minute,
 * else in full ("balls stopped 12:04:31.20, clock started .23, tip met the ball .87"). */
export function shortClockText(ms, anchor) {
  const full = clockText(ms);
  const base = clockText(anchor);
  if (full.slice(0, 8) === base.slice(0, 8)) return full.slice(8);
  if (full.slice(0, 5) === base.slice(0, 5)) return full.slice(5);
  return full;
}

/** The clip's times in order: its own instant (what the camera saw) and the clock's steps
 * in its window: [{at, text}]. Pure. */
export function clipTimes(meta) {
  const times = [{ at: meta.at, key: `clip.step.${meta.kind}`, own: true }];
  for (const step of meta.clock || []) {
    const by = step.by === "camera" || step.by === "referee" ? ` ${t(`clip.by.${step.by}`)}` : "";
    times.push({ at: step.at, key: `clip.${step.type}`, by, own: false });
  }
  times.sort((a, b) => a.at - b.at);
  return times.map((x) => ({ ...x, text: `${t(x.key)}${x.by || ""}` }));
}

export class ClipViewer {
  /** root: an empty element to fill; onBack: what "Back to the clock" does. */
  constructor(root, { onBack, backKey = "clip.back" } = {}) {
    this.root = root;
    this.onBack = onBack;
    this.backKey = backKey;
    this.meta = null;
    this.urls = [];
    this.index = 0;
    this.playing = null;
    this.loadId = 0;
    root.classList.add("clipview");
    root.innerHTML = `
      <div class="cv-head"><b class="cv-title"></b><span class="cv-pos"></span></div>
      <div class="cv-stage"><img class="cv-frame" alt=""><p class="cv-msg" role="status"></p></div>
      <ol class="cv-times"></ol>
      <div class="cv-controls">
        <button type="button" class="cv-prev">▕◀</button>
        <button type="button" class="cv-play">▶</button>
        <button type="button" class="cv-next">▶▏</button>
        <button type="button" class="cv-back"></button>
      </div>
      <div class="cv-list-box"><b class="cv-list-title"></b><ul class="cv-list"></ul></div>`;
    this.el = (cls) => root.querySelector(`.${cls}`);
    this.el("cv-prev").addEventListener("click", () => { this.pause(); this.show(this.index - 1); });
    this.el("cv-next").addEventListener("click", () => { this.pause(); this.show(this.index + 1); });
    this.el("cv-play").addEventListener("click", () => (this.playing ? this.pause() : this.play()));
    this.el("cv-back").addEventListener("click", () => { this.close(); if (this.onBack) this.onBack(); });
    if (!onBack) this.el("cv-back").hidden = true;
    root.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowLeft") { ev.preventDefault(); this.pause(); this.show(this.index - 1); }
      else if (ev.key === "ArrowRight") { ev.preventDefault(); this.pause(); this.show(this.index + 1); }
    });
    this.texts();
  }

  texts() {
    this.el("cv-prev").title = t("clip.prev");
    this.el("cv-prev").setAttribute("aria-label", t("clip.prev"));
    this.el("cv-next").title = t("clip.next");
    this.el("cv-next").setAttribute("aria-label", t("clip.next"));
    this.el("cv-play").setAttribute("aria-label", t(this.playing ? "clip.pause" : "clip.play"));
    this.el("cv-back").textContent = t(this.backKey);
    this.el("cv-list-title").textContent = t("clip.list");
    if (this.meta) { this.drawTimes(); this.show(this.index); }
    if (this.clips) this.drawList();
  }

  /** The newest clips (of a match or a table, or all), newest first; opens `open` or the
   * newest. */
  async list({ match = null, table = null, open = null } = {}) {
    const query = new URLSearchParams({ limit: String(LIST_LIMIT) });
    if (match) query.set("match", match);
    if (table) query.set("table", table);
    let response;
    try { response = await fetch(`/api/camera/clips?${query}`, { cache: "no-store" }); } catch { response = null; }
    if (!response || !response.ok) {
      this.clips = [];
      this.message(t("clip.off"));
      this.root.dataset.state = "off";
      this.drawList();
      return;
    }
    this.clips = ((await response.json()).clips || []).slice().reverse();
    this.drawList();
    if (!this.clips.length) {
      this.message(t("clip.none"));
      this.root.dataset.state = "empty";
      return;
    }
    const wanted = open && this.clips.find((c) => c.id === open) ? open : this.clips[0].id;
    await this.open(wanted);
  }

  drawList() {
    const ul = this.el("cv-list");
    ul.replaceChildren();
    for (const clip of this.clips || []) {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.clip = clip.id;
      b.textContent = `${t(`clip.kind.${clip.kind}`)} ${clockText(clip.at)}`;
      if (this.meta && this.meta.id === clip.id) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => this.open(clip.id));
      li.append(b);
      ul.append(li);
    }
    this.el("cv-list-box").hidden = (this.clips || []).length < 2;
  }

  message(text) {
    this.el("cv-msg").textContent = text;
    this.el("cv-msg").hidden = !text;
  }

  async open(id) {
    const load = ++this.loadId;
    this.pause();
    this.release();
    this.root.dataset.state = "loading";
    this.message("");
    try {
      const [metaResponse, videoResponse] = await Promise.all([
        fetch(`/api/camera/clips/${encodeURIComponent(id)}.json`, { cache: "no-store" }),
        fetch(`/api/camera/clips/${encodeURIComponent(id)}.mjpeg`, { cache: "no-store" }),
      ]);
      if (!metaResponse.ok || !videoResponse.ok) throw new Error("not found");
      const meta = await metaResponse.json();
      const data = await videoResponse.arrayBuffer();
      if (load !== this.loadId) return; // another clip was asked for meanwhile
      this.meta = meta;
      this.data = data;
      this.urls = new Array(meta.frames.length).fill(null);
      this.root.dataset.clip = meta.id;
      this.drawTimes();
      this.drawList();
      // the frame nearest the clip's instant first: what the referee came to see
      let nearest = 0;
      meta.frames.forEach((f, i) => {
        if (Math.abs(f.at - meta.at) < Math.abs(meta.frames[nearest].at - meta.at)) nearest = i;
      });
      this.el("cv-title").textContent = `${t(`clip.kind.${meta.kind}`)} ${clockText(meta.at)}`;
      this.root.dataset.state = meta.frames.length ? "ready" : "empty";
      if (!meta.frames.length) this.message(t("clip.none"));
      else await this.show(nearest);
    } catch {
      if (load !== this.loadId) return;
      this.root.dataset.state = "failed";
      this.message(t("clip.failed"));
    }
  }

  url(i) {
    if (!this.urls[i]) {
      const f = this.meta.frames[i];
      this.urls[i] = URL.createObjectURL(new Blob([this.data.slice(f.offset, f.offset + f.bytes)],
        { type: "image/jpeg" }));
    }
    return this.urls[i];
  }

  drawTimes() {
    const ol = this.el("cv-times");
    ol.replaceChildren();
    const meta = this.meta;
    clipTimes(meta).forEach((x, k) => {
      const li = document.createElement("li");
      li.dataset.at = String(x.at);
      if (x.own) li.classList.add("own");
      const when = k === 0 ? clockText(x.at) : shortClockText(x.at, clipTimes(meta)[0].at);
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = `${x.text} ${when}`;
      b.addEventListener("click", () => { this.pause(); this.show(this.nearestFrame(x.at)); });
      li.append(b);
      ol.append(li);
    });
  }

  nearestFrame(at) {
    let best = 0;
    this.meta.frames.forEach((f, i) => { if (Math.abs(f.at - at) < Math.abs(this.meta.frames[best].at - at)) best = i; });
    return best;
  }

  async show(i) {
    if (!this.meta || !this.data || !this.meta.frames.length) return;
    const n = this.meta.frames.length;
    this.index = Math.max(0, Math.min(n - 1, i));
    const f = this.meta.frames[this.index];
    const img = this.el("cv-frame");
    await new Promise((resolve) => {
      img.onload = resolve;
      img.onerror = resolve;
      img.src = this.url(this.index);
    });
    const offset = (f.at - this.meta.at) / 1000;
    const sign = offset > 0.0005 ? "+" : offset < -0.0005 ? "−" : "±";
    this.el("cv-pos").textContent = `${t("clip.frame", { i: this.index + 1, n })} · ${clockText(f.at)} (${sign}${decimal(Math.abs(offset), 2)} s)`;
    this.root.dataset.frame = String(this.index);
    this.root.dataset.frameAt = String(f.at);
    this.el("cv-prev").disabled = this.index === 0;
    this.el("cv-next").disabled = this.index === n - 1;
    // the clock's steps already past at this frame are marked
    for (const li of this.el("cv-times").children) li.classList.toggle("past", Number(li.dataset.at) <= f.at);
  }

  play() {
    if (!this.meta || !this.meta.frames.length) return;
    if (this.index >= this.meta.frames.length - 1) this.index = 0;
    const step = async () => {
      await this.show(this.index);
      if (!this.playing) return;
      if (this.index >= this.meta.frames.length - 1) { this.pause(); return; }
      const wait = this.meta.frames[this.index + 1].at - this.meta.frames[this.index].at;
      this.index += 1;
      this.playing = setTimeout(step, Math.max(10, Math.min(500, wait)));
    };
    this.playing = setTimeout(step, 0);
    this.root.dataset.playing = "1";
    this.el("cv-play").textContent = "❚❚";
    this.el("cv-play").setAttribute("aria-label", t("clip.pause"));
  }

  pause() {
    if (this.playing) clearTimeout(this.playing);
    this.playing = null;
    this.root.dataset.playing = "0";
    this.el("cv-play").textContent = "▶";
    this.el("cv-play").setAttribute("aria-label", t("clip.play"));
  }

  release() {
    for (const url of this.urls) if (url) URL.revokeObjectURL(url);
    this.urls = [];
    this.data = null;
  }

  close() {
    this.pause();
    this.release();
    this.loadId += 1;
  }
}
