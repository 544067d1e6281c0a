// The overlay's stats lower-third (/overlay?table=ID&stats=1), for the commentator's cut:
// each player's average shot time and time fouls in this match, above their side of the
// clock. Figures from the server's match record (matchstats.js); hidden without a timer
// (12.1: there are no shot times to show). Mounted by overlay.js; its own stylesheet.

import { t } from "./i18n.js";
import { MatchStats, seconds } from "./matchstats.js";

export function mountStatsThird(third) {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/static/overlay_stats.css";
  document.head.append(link);

  const panel = document.createElement("div");
  panel.id = "stats-third";
  panel.className = "stats-third hidden";
  const sides = [0, 1].map((i) => {
    const side = document.createElement("div");
    side.className = `stats-side p${i}`;
    side.dataset.player = String(i);
    side.innerHTML = '<span class="k avg"></span> <b class="avg-v digits"></b>'
      + '<span class="sep">·</span><span class="k tf"></span> <b class="tf-v digits"></b>';
    panel.append(side);
    return side;
  });
  third.append(panel);

  let record = null;
  function draw() {
    panel.classList.toggle("hidden", !record || !record.timer);
    if (!record || !record.timer) return;
    sides.forEach((side, i) => {
      const s = record.players_stats[i];
      side.querySelector(".avg").textContent = t("stats.avg_short");
      side.querySelector(".avg-v").textContent = `${seconds(s.mean_ms)} ${t("stats.sec")}`;
      side.querySelector(".tf").textContent = t("stats.time_fouls");
      side.querySelector(".tf-v").textContent = String(s.time_fouls);
      side.dataset.timeFouls = String(s.time_fouls);
    });
  }
  const stats = new MatchStats((r) => { record = r; draw(); });
  return {
    onState: (s) => stats.onState(s),
    onEvent: (event, meta) => stats.onEvent(event, meta),
    redraw: draw,
    stats,
  };
}
