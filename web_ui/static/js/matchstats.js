// A table's current match statistics, kept fresh from its live feed: the /stats page and the
// overlay's stats lower-third use it. The figures come from GET /api/matches/{id} (built on
// the server from the event log); this only decides when to ask again: when the match
// changes, and after the events that change a figure (debounced: one request per second at
// most, whatever the crowd of events).

import { addStrings, lang } from "./i18n.js";

addStrings({
  en: {
    "stats.title": "Match statistics",
    "stats.match": "Match",
    "stats.frame": "Frame",
    "stats.shots": "Shots",
    "stats.mean": "Average shot",
    "stats.median": "Median",
    "stats.p90": "90% of shots within",
    "stats.max": "Longest",
    "stats.over20": "Over 20 s",
    "stats.over30": "Over 30 s",
    "stats.time_fouls": "Time fouls",
    "stats.fouls": "Fouls",
    "stats.extensions": "Extensions",
    "stats.whites": "Whites",
    "stats.visits": "Visits",
    "stats.frames": "Frames",
    "stats.this_frame": "this frame",
    "stats.frame_short": "frame",
    "stats.avg_short": "Avg shot",
    "stats.no_timer": "no timer: no shot times (12.1)",
    "stats.chart.shots": "Time per shot, frame {frame}",
    "stats.chart.distribution": "Shot times, the match",
    "stats.chart.timeline": "Who was at the table",
    "stats.protocol": "Protocol",
    "stats.sec": "s",
  },
  ru: {
    "stats.title": "Статистика матча",
    "stats.match": "Матч",
    "stats.frame": "Партия",
    "stats.shots": "Удары",
    "stats.mean": "Средний удар",
    "stats.median": "Медиана",
    "stats.p90": "90% ударов быстрее",
    "stats.max": "Самый долгий",
    "stats.over20": "Дольше 20 с",
    "stats.over30": "Дольше 30 с",
    "stats.time_fouls": "Фолы по времени",
    "stats.fouls": "Фолы",
    "stats.extensions": "Продления",
    "stats.whites": "Белые",
    "stats.visits": "Подходы",
    "stats.frames": "Партии",
    "stats.this_frame": "в этой партии",
    "stats.frame_short": "партия",
    "stats.avg_short": "Ср. удар",
    "stats.no_timer": "без таймера: времени ударов нет (12.1)",
    "stats.chart.shots": "Время на каждый удар, партия {frame}",
    "stats.chart.distribution": "Время ударов за матч",
    "stats.chart.timeline": "Кто был у стола",
    "stats.protocol": "Протокол",
    "stats.sec": "с",
  },
});

// Events after which some figure may differ (warnings, respots and the like change none).
const CHANGES = new Set([
  "clock.started", "clock.stopped", "clock.expired", "clock.extended", "clock.paused",
  "clock.resumed", "clock.corrected", "correction.undone", "foul", "turn", "shot.result",
  "frame.started", "frame.ended", "match.ended", "match.started", "table.archived",
]);
const MIN_GAP_MS = 1000;

/** Seconds in tenths, half up, as the protocol prints them ("14.2"; "14,2" in Russian);
 *  "—" when absent (no timer). */
export function seconds(ms) {
  if (ms == null) return "—";
  const tenths = Math.floor((ms + 50) / 100);
  const text = `${Math.floor(tenths / 10)}.${tenths % 10}`;
  return lang === "ru" ? text.replace(".", ",") : text;
}

export class MatchStats {
  /** onStats(record, state): a fresh record (GET /api/matches/{id}?shots=false). */
  constructor(onStats, { shots = false } = {}) {
    this.onStats = onStats;
    this.shots = shots;
    this.state = null;
    this.matchId = null;
    this.record = null;
    this.timer = 0;
    this.lastAsked = 0;
    this.pending = false;
    this.asked = 0; // requests made (for the tests)
  }

  /** From the feed's onState: a new match (or the first state) is fetched at once. */
  onState(state) {
    this.state = state;
    const id = state && state.match && state.match.id;
    if (id && id !== this.matchId) {
      this.matchId = id;
      this.refresh(0);
    }
  }

  /** From the feed's onEvent: live events that change a figure ask again, debounced. */
  onEvent(event, meta = {}) {
    if (meta.replayed || !CHANGES.has(event.type)) return;
    this.refresh(300);
  }

  refresh(delayMs) {
    if (!this.matchId) return;
    if (this.timer) return; // one already scheduled: it will see the latest
    const wait = Math.max(delayMs, this.lastAsked + MIN_GAP_MS - Date.now());
    this.timer = setTimeout(() => { this.timer = 0; this.fetch(); }, Math.max(0, wait));
  }

  async fetch() {
    const id = this.matchId;
    this.lastAsked = Date.now();
    this.asked += 1;
    try {
      const url = `/api/matches/${encodeURIComponent(id)}?shots=${this.shots ? "true" : "false"}`;
      const reply = await fetch(url, { cache: "no-store" });
      if (!reply.ok) return;
      const record = await reply.json();
      if (id !== this.matchId) return; // the table moved on meanwhile
      this.record = record;
      this.onStats(record, this.state);
    } catch {
      this.refresh(MIN_GAP_MS); // the server is restarting: try again shortly
    }
  }
}
