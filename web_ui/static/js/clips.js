// /clips?match=<id>[&clip=<clip id>]: the camera's clips of a match, frame by frame beside
// the clock's times (issue 21 point 5); the match record and its protocol page link here.

import { applyI18n } from "./i18n.js";
import { ClipViewer } from "./clipview.js";

applyI18n();
const query = new URLSearchParams(location.search);
const match = query.get("match");
const viewer = new ClipViewer(document.getElementById("clip-view"), {
  onBack: match ? () => { location.href = `/report?match=${encodeURIComponent(match)}`; } : null,
  backKey: "clip.back_report",
});
viewer.list({ match, open: query.get("clip") });
