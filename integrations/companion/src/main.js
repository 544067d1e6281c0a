// Bitfocus Companion module: a Stream Deck as the shot clock's referee buttons and tally.
//
// Actions: start / shot (one button: start when the clock waits, shot while it runs),
// extension, foul, undo, pause / resume, turn, new frame. Feedbacks: the phase's colours,
// the warning (10 s and under), the expiry, the player at the table. Variables: the
// remaining time as the table shows it, the player at the table, the score, fouls and
// extensions left per player. Talks to the table's WebSocket with the referee token.

"use strict";

const {
  InstanceBase, InstanceStatus, combineRgb, runEntrypoint,
} = require("@companion-module/base");
const WebSocket = require("ws");
const { ShotclockClient } = require("./client.js");

const TICK_MS = 100; // the remaining-time variable changes at most ten times a second

const COLOURS = {
  ready: { bgcolor: combineRgb(40, 40, 40), color: combineRgb(255, 255, 255) },
  running: { bgcolor: combineRgb(0, 110, 40), color: combineRgb(255, 255, 255) },
  warning: { bgcolor: combineRgb(255, 191, 0), color: combineRgb(0, 0, 0) },
  critical: { bgcolor: combineRgb(230, 0, 0), color: combineRgb(255, 255, 255) },
  paused: { bgcolor: combineRgb(0, 70, 160), color: combineRgb(255, 255, 255) },
  expired: { bgcolor: combineRgb(230, 0, 0), color: combineRgb(255, 255, 0) },
  frame_over: { bgcolor: combineRgb(120, 90, 0), color: combineRgb(255, 255, 255) },
  off: { bgcolor: combineRgb(0, 0, 0), color: combineRgb(160, 160, 160) },
};

const PLAYER_CHOICES = [
  { id: "table", label: "The player at the table" },
  { id: "0", label: "Player A" },
  { id: "1", label: "Player B" },
];

function playerField(value) {
  return value === "0" || value === "1" ? { player: Number(value) } : {};
}

class ShotclockInstance extends InstanceBase {
  constructor(internal) {
    super(internal);
    this.client = null;
    this.ticker = null;
    this.lastValues = {};
  }

  async init(config, _isFirstInit, secrets) {
    this.config = config;
    this.secrets = secrets || {};
    this.setActionDefinitions(this.actions());
    this.setFeedbackDefinitions(this.feedbacks());
    this.setVariableDefinitions(this.variables());
    this.connect();
  }

  async configUpdated(config, secrets) {
    this.config = config;
    this.secrets = secrets || {};
    this.connect();
  }

  async destroy() {
    this.disconnect();
  }

  getConfigFields() {
    return [
      { type: "textinput", id: "url", label: "Service URL", width: 8,
        default: "http://127.0.0.1:8000" },
      { type: "textinput", id: "table", label: "Table", width: 4, default: "1" },
      { type: "secret-text", id: "token", label: "Referee token (SHOTCLOCK_REFEREE_TOKEN)",
        width: 12, default: "" },
    ];
  }

  disconnect() {
    clearInterval(this.ticker);
    this.ticker = null;
    if (this.client) this.client.stop();
    this.client = null;
  }

  connect() {
    this.disconnect();
    const token = this.secrets.token || this.config.token || "";
    const client = new ShotclockClient({ url: this.config.url, table: this.config.table,
      token, WebSocket });
    this.client = client;
    client.on("status", (status, message) => {
      const map = { connecting: InstanceStatus.Connecting, ok: InstanceStatus.Ok,
        failed: InstanceStatus.ConnectionFailure, disconnected: InstanceStatus.Disconnected,
        refused: InstanceStatus.AuthenticationFailure };
      if (status === "ok" && message) this.updateStatus(InstanceStatus.UnknownWarning, message);
      else this.updateStatus(map[status] || InstanceStatus.UnknownError, message || null);
    });
    client.on("change", () => this.refresh());
    client.on("event", (event) => this.log("debug", `event ${event.type} seq ${event.seq}`));
    // The time counts down by itself between events: derive it ten times a second.
    this.ticker = setInterval(() => {
      if (client.state && client.state.phase === "running") this.refresh();
    }, TICK_MS);
    client.start();
  }

  /** Variables and feedbacks from the client's state, sent only when they change. */
  refresh() {
    const client = this.client;
    if (!client) return;
    const state = client.state;
    const v = client.view();
    const players = state ? state.players : ["", ""];
    const score = state ? (state.match?.score || state.frames_won || [0, 0]) : [0, 0];
    const atTable = state && state.phase !== "frame_over" ? players[state.player] : "";
    const values = {
      remaining: client.connected ? v.text : "",
      remaining_ms: v.remaining == null ? "" : String(v.remaining),
      stage: client.connected ? v.stage : "off",
      phase: state ? state.phase : "",
      player: atTable || "",
      player_a: players[0] || "", player_b: players[1] || "",
      score: `${score[0]}:${score[1]}`, score_a: String(score[0]), score_b: String(score[1]),
      fouls_a: state ? String(state.fouls[0]) : "", fouls_b: state ? String(state.fouls[1]) : "",
      extensions_left_a: state ? String(state.extensions_left[0]) : "",
      extensions_left_b: state ? String(state.extensions_left[1]) : "",
      frame: state ? String(state.frame) : "",
    };
    const changed = {};
    for (const [key, value] of Object.entries(values)) {
      if (this.lastValues[key] !== value) changed[key] = value;
    }
    if (!Object.keys(changed).length) return;
    this.lastValues = values;
    this.setVariableValues(changed);
    // Feedbacks depend on the stage, the phase and the player only: not every tenth.
    if ("stage" in changed || "phase" in changed || "player" in changed) this.checkFeedbacks();
  }

  async send(name, fields = {}) {
    try {
      await this.client.command(name, fields);
    } catch (err) {
      // The service says why (e.g. "extension already used this frame (12.5)").
      this.log("warn", `${name} refused: ${err.code || ""} ${err.message}`);
      throw err;
    }
  }

  allowed(name) {
    const state = this.client && this.client.state;
    return Boolean(state && Array.isArray(state.allowed) && state.allowed.includes(name));
  }

  actions() {
    return {
      start_shot: {
        name: "Start / shot",
        description: "Start the clock when it waits; the shot played when it runs",
        options: [],
        callback: async () => this.send(this.allowed("shot") ? "shot" : "start"),
      },
      extension: {
        name: "Extension",
        options: [{ type: "dropdown", id: "player", label: "For", default: "table",
          choices: PLAYER_CHOICES }],
        callback: async (action) => this.send("extension", playerField(action.options.player)),
      },
      foul: {
        name: "Foul",
        options: [
          { type: "dropdown", id: "player", label: "By", default: "table",
            choices: PLAYER_CHOICES },
          { type: "textinput", id: "reason", label: "What (said in the record)",
            default: "foul" },
        ],
        callback: async (action) => this.send("foul", {
          reason: String(action.options.reason || "foul"), ...playerField(action.options.player),
        }),
      },
      undo: {
        name: "Undo the last step",
        options: [],
        callback: async () => this.send("undo"),
      },
      pause_resume: {
        name: "Pause / resume",
        options: [],
        callback: async () => this.send(this.allowed("resume") ? "resume" : "pause"),
      },
      turn: {
        name: "Turn (the other player to the table)",
        options: [],
        callback: async () => this.send("turn"),
      },
      new_frame: {
        name: "New frame",
        description: "Between frames: the next frame. During a frame: ends it (winner and "
          + "reason needed)",
        options: [
          { type: "dropdown", id: "winner", label: "Winner (a frame in progress)",
            default: "none", choices: [{ id: "none", label: "None (between frames)" },
              { id: "0", label: "Player A" }, { id: "1", label: "Player B" }] },
          { type: "textinput", id: "reason", label: "Reason (a frame in progress)",
            default: "" },
        ],
        callback: async (action) => {
          const fields = {};
          if (action.options.winner === "0" || action.options.winner === "1") {
            fields.winner = Number(action.options.winner);
            fields.reason = String(action.options.reason || "referee");
          }
          await this.send("new_frame", fields);
        },
      },
    };
  }

  feedbacks() {
    const stage = () => (this.client && this.client.connected ? this.client.view().stage : "off");
    return {
      phase_colours: {
        type: "advanced",
        name: "Phase colours",
        description: "Grey ready, green running, amber 10 s and under, red 5 s and under "
          + "and expired, blue paused, black offline",
        options: [],
        callback: () => COLOURS[stage()] || COLOURS.off,
      },
      phase: {
        type: "boolean",
        name: "Phase is",
        defaultStyle: COLOURS.running,
        options: [{ type: "dropdown", id: "phase", label: "Phase", default: "running",
          choices: ["ready", "running", "paused", "expired", "frame_over"].map(
            (id) => ({ id, label: id })) }],
        callback: (fb) => Boolean(this.client?.state?.phase === fb.options.phase),
      },
      warning: {
        type: "boolean",
        name: "Warning (10 s and under)",
        defaultStyle: COLOURS.warning,
        options: [],
        callback: () => ["warning", "critical"].includes(stage()),
      },
      expired: {
        type: "boolean",
        name: "Time expired",
        defaultStyle: COLOURS.expired,
        options: [],
        callback: () => stage() === "expired",
      },
      at_table: {
        type: "boolean",
        name: "Player at the table",
        defaultStyle: { bgcolor: combineRgb(255, 255, 255), color: combineRgb(0, 0, 0) },
        options: [{ type: "dropdown", id: "player", label: "Player", default: "0",
          choices: PLAYER_CHOICES.slice(1) }],
        callback: (fb) => {
          const state = this.client?.state;
          return Boolean(state && state.phase !== "frame_over"
            && String(state.player) === fb.options.player);
        },
      },
    };
  }

  variables() {
    return [
      { variableId: "remaining", name: "Remaining time as the table shows it (23, 4.7)" },
      { variableId: "remaining_ms", name: "Remaining time, ms" },
      { variableId: "stage", name: "Stage (ready running warning critical paused expired)" },
      { variableId: "phase", name: "Phase" },
      { variableId: "player", name: "Player at the table" },
      { variableId: "player_a", name: "Player A" },
      { variableId: "player_b", name: "Player B" },
      { variableId: "score", name: "Score (frames won, A:B)" },
      { variableId: "score_a", name: "Frames won by A" },
      { variableId: "score_b", name: "Frames won by B" },
      { variableId: "fouls_a", name: "Fouls of A this frame" },
      { variableId: "fouls_b", name: "Fouls of B this frame" },
      { variableId: "extensions_left_a", name: "Extensions left to A" },
      { variableId: "extensions_left_b", name: "Extensions left to B" },
      { variableId: "frame", name: "Frame number" },
    ];
  }
}

module.exports = { ShotclockInstance };

if (require.main === module) runEntrypoint(ShotclockInstance, []);
