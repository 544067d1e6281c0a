// The digits and stages the module shows, from a state and the server's time (pure).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { formatRemaining, view } = require("../src/client.js");

test("whole seconds rounded up above 5 s, tenths rounded up at and below", () => {
  assert.equal(formatRemaining(35000), "35");
  assert.equal(formatRemaining(22001), "23");
  assert.equal(formatRemaining(5001), "6");
  assert.equal(formatRemaining(5000), "5.0");
  assert.equal(formatRemaining(4610), "4.7");
  assert.equal(formatRemaining(1), "0.1");
  assert.equal(formatRemaining(null), "--");
});

test("a running clock is derived from its deadline, never counted", () => {
  const state = { phase: "running", deadline: 100_000, remaining_ms: 35000, timer: true };
  assert.deepEqual(view(state, 90_000), { remaining: 10000, text: "10", stage: "warning" });
  assert.deepEqual(view(state, 95_500), { remaining: 4500, text: "4.5", stage: "critical" });
  assert.deepEqual(view(state, 80_000), { remaining: 20000, text: "20", stage: "running" });
  assert.equal(view(state, 200_000).remaining, 0);
  assert.equal(view({ ...state, phase: "expired", remaining_ms: 0 }, 0).text, "0.0");
  assert.equal(view({ ...state, phase: "paused", remaining_ms: 1234 }, 0).stage, "paused");
  assert.equal(view({ phase: "ready", timer: false }, 0).text, "--");
  assert.equal(view({ phase: "frame_over" }, 0).stage, "frame_over");
});
