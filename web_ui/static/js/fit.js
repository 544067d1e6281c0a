// Text that must be read in full, never cut (issue 23: "Александр Ива…" on a 1920 px display,
// two players called Александр could not be told apart): a name or a winner's line keeps its
// CSS size where it fits, and otherwise shrinks, then (where the element allows it) wraps
// onto a second line and shrinks again, down to a floor. The element must have a bounded
// box (a width from its container, a height or max-height, overflow hidden), so that
// "fits" is scrollWidth <= clientWidth and scrollHeight <= clientHeight, the same test the
// browser tests apply.

const overflows = (el) => el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;

/**
 * Fit `el`'s text into its box. `min`: the smallest font size in px on one line; `wrap`:
 * {min} to allow a second line (class "fit-wrap": white-space normal) down to that size.
 * Returns the font size used (px).
 */
export function fitText(el, { min = 12, wrap = null } = {}) {
  if (!el) return 0;
  el.classList.remove("fit-wrap");
  el.style.fontSize = "";
  if (!el.clientWidth) return 0; // not displayed: fitted when it is
  const base = parseFloat(getComputedStyle(el).fontSize) || 16;
  let size = shrink(el, base, min);
  if (overflows(el) && wrap) {
    el.classList.add("fit-wrap");
    el.style.fontSize = "";
    size = shrink(el, Math.min(base, parseFloat(getComputedStyle(el).fontSize) || base), wrap.min);
  }
  return size;
}

function shrink(el, from, min) {
  let size = from;
  el.style.fontSize = `${size}px`;
  // Halving the gap each time: at most ~8 layouts for any text.
  if (!overflows(el)) return size;
  let lo = min;
  let hi = from;
  el.style.fontSize = `${lo}px`;
  if (overflows(el)) return lo;
  while (hi - lo > 0.5) {
    size = (lo + hi) / 2;
    el.style.fontSize = `${size}px`;
    if (overflows(el)) hi = size; else lo = size;
  }
  el.style.fontSize = `${lo}px`;
  return lo;
}

/** Refit on resize (coalesced to one frame) and once the page's fonts are in. */
export function refitOn(fn) {
  window.shotclockRefit = fn; // the tests refit at once after resizing the page
  let frame = 0;
  const later = () => { cancelAnimationFrame(frame); frame = requestAnimationFrame(fn); };
  addEventListener("resize", later);
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(later);
  return later;
}

/**
 * Fit a block of several lines that share one box (a winner's title, why, the score):
 * the block's CSS sizes are multiplied by the custom property --fit (sizes written as
 * calc(Xvh * var(--fit, 1))), lowered until the box and each of `parts` fit, down to `min`.
 */
export function fitBlock(box, parts = [], { min = 0.3 } = {}) {
  if (!box) return 1;
  const bad = () => overflows(box) || parts.some((el) => el && el.clientWidth && el.scrollWidth > el.clientWidth + 1);
  box.style.setProperty("--fit", "1");
  if (!box.clientWidth || !bad()) return 1;
  let lo = min;
  let hi = 1;
  box.style.setProperty("--fit", String(lo));
  if (bad()) return lo;
  while (hi - lo > 0.02) {
    const k = (lo + hi) / 2;
    box.style.setProperty("--fit", String(k));
    if (bad()) hi = k; else lo = k;
  }
  box.style.setProperty("--fit", String(lo));
  return lo;
}
