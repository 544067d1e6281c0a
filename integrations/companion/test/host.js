// Companion's side of the module's IPC, as Companion runs a module: fork the entrypoint
// with MODULE_MANIFEST, CONNECTION_ID and VERIFICATION_TOKEN, accept its registration,
// init it with a config, then execute actions and subscribe feedbacks as buttons would,
// keeping every variable value, feedback value and status it reports.

"use strict";

const { fork } = require("node:child_process");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");

class FakeCompanion {
  constructor() {
    this.variables = {};
    this.definitions = { actions: [], feedbacks: [], variables: [] };
    this.feedbackValues = {};
    this.statuses = [];
    this.logs = [];
    this.nextId = 1;
    this.waiting = new Map();
    this.watchers = new Set();
    this.child = null;
  }

  async start(config, secrets) {
    const registered = new Promise((resolve) => { this.onRegister = resolve; });
    this.child = fork(path.join(ROOT, "src", "main.js"), [], {
      env: { ...process.env, MODULE_MANIFEST: path.join(ROOT, "companion", "manifest.json"),
        CONNECTION_ID: "shotclock-test", VERIFICATION_TOKEN: "test-verification" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    this.output = "";
    this.child.stdout.on("data", (d) => { this.output += d; });
    this.child.stderr.on("data", (d) => { this.output += d; });
    this.child.on("message", (msg) => this.receive(msg));
    await registered;
    return this.call("init", { label: "shotclock", isFirstInit: false, config, secrets,
      lastUpgradeIndex: -1 });
  }

  async stop() {
    if (!this.child) return;
    try {
      await this.call("destroy", {});
    } catch {
      // already gone
    }
    this.child.kill();
    await new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve();
      else this.child.once("exit", resolve);
    });
  }

  call(name, payload, timeout = 5000) {
    const callbackId = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no answer`)), timeout);
      this.waiting.set(callbackId, { resolve, reject, timer });
      this.child.send({ direction: "call", name, payload: JSON.stringify(payload), callbackId });
    });
  }

  /** Press a button whose action is `actionId`: {success, errorMessage}. */
  action(actionId, options = {}) {
    return this.call("executeAction", { action: { id: `a-${this.nextId}`, controlId: "bank:1",
      actionId, options }, surfaceId: "streamdeck:test" });
  }

  /** Put a feedback on a button; its value arrives in feedbackValues[id]. */
  async feedback(id, feedbackId, options = {}) {
    await this.call("updateFeedbacks", { feedbacks: { [id]: { id, controlId: `bank:${id}`,
      feedbackId, options, disabled: false, isInverted: false, upgradeIndex: null } } });
  }

  receive(msg) {
    if (msg.direction === "response") {
      const waiting = this.waiting.get(msg.callbackId);
      if (!waiting) return;
      this.waiting.delete(msg.callbackId);
      clearTimeout(waiting.timer);
      const data = msg.payload ? JSON.parse(msg.payload) : undefined;
      if (msg.success) waiting.resolve(data);
      else waiting.reject(new Error(data && data.message ? data.message : "failed"));
      return;
    }
    const payload = msg.payload ? JSON.parse(msg.payload) : undefined;
    switch (msg.name) {
      case "register":
        this.onRegister(payload);
        break;
      case "setActionDefinitions":
        this.definitions.actions = payload.actions.map((a) => a.id);
        break;
      case "setFeedbackDefinitions":
        this.definitions.feedbacks = payload.feedbacks.map((f) => f.id);
        break;
      case "setVariableDefinitions":
        this.definitions.variables = payload.variables.map((v) => v.id);
        for (const { id, value } of payload.newValues || []) this.variables[id] = value;
        break;
      case "setVariableValues":
        for (const { id, value } of payload.newValues) this.variables[id] = value;
        break;
      case "updateFeedbackValues":
        for (const { id, value } of payload.values) this.feedbackValues[id] = value;
        break;
      case "set-status":
        this.statuses.push(payload);
        break;
      case "log-message":
      case "log":
        this.logs.push(payload);
        break;
      default:
        break;
    }
    if (msg.callbackId) {
      this.child.send({ direction: "response", callbackId: msg.callbackId, success: true,
        payload: JSON.stringify({}) });
    }
    for (const watcher of this.watchers) watcher();
  }

  /** Wait until check() is true (re-checked on every message from the module). */
  until(check, what, timeout = 8000) {
    return new Promise((resolve, reject) => {
      const done = () => {
        let ok = false;
        try {
          ok = check();
        } catch {
          ok = false;
        }
        if (!ok) return;
        clearTimeout(timer);
        this.watchers.delete(done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.watchers.delete(done);
        reject(new Error(`timed out waiting for ${what}; variables ${JSON.stringify(
          this.variables)}; feedbacks ${JSON.stringify(this.feedbackValues)}; statuses `
          + `${JSON.stringify(this.statuses.slice(-3))}; output ${this.output.slice(-800)}`));
      }, timeout);
      this.watchers.add(done);
      done();
    });
  }
}

module.exports = { FakeCompanion };
