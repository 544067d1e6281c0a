// Web Audio tones: a beep at each warning, a long tone at expiry. Browsers only allow
// sound after a user gesture, so the page asks for one click.

export class Buzzer {
  constructor() {
    this.ctx = null;
    this.played = []; // what was sounded, for the curious (and the tests)
  }

  get enabled() {
    return this.ctx !== null && this.ctx.state === "running";
  }

  async enable() {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return false;
    if (!this.ctx) this.ctx = new Ctx();
    if (this.ctx.state !== "running") await this.ctx.resume();
    return this.enabled;
  }

  tone(frequency, seconds, kind) {
    this.played.push(kind);
    if (!this.enabled) return;
    const ctx = this.ctx;
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.type = "square";
    osc.frequency.value = frequency;
    const t0 = ctx.currentTime;
    gain.gain.setValueAtTime(0.0001, t0);
    gain.gain.exponentialRampToValueAtTime(0.3, t0 + 0.01);
    gain.gain.setValueAtTime(0.3, t0 + seconds - 0.03);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + seconds);
    osc.connect(gain).connect(ctx.destination);
    osc.start(t0);
    osc.stop(t0 + seconds + 0.02);
  }

  warning() { this.tone(1000, 0.15, "warning"); }

  expired() { this.tone(700, 1.6, "expired"); }
}
