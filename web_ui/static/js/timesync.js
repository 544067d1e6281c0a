// Estimating the server's clock from ping/pong: offset = server_time - (t0 + t1) / 2, taken
// from the sample with the smallest round trip among the recent ones. Local times come
// from performance.now() (monotonic), so a wall-clock jump on this device changes nothing.

const WINDOW = 8;

export function localNow() {
  return performance.timeOrigin + performance.now();
}

export class ClockOffset {
  constructor() {
    this.samples = [];
    this.rough = null; // from a snapshot's server_time, until the first pong
  }

  reset() {
    this.samples = [];
    this.rough = null;
  }

  /** A rough first estimate: the state was stamped at most one trip ago. */
  roughFrom(serverTime, receivedAt = localNow()) {
    if (typeof serverTime === "number" && this.samples.length === 0) {
      this.rough = serverTime - receivedAt;
    }
  }

  add(t0, t1, serverTime) {
    if (typeof serverTime !== "number" || !(t1 >= t0)) return;
    this.samples.push({ rtt: t1 - t0, offset: serverTime - (t0 + t1) / 2 });
    if (this.samples.length > WINDOW) this.samples.shift();
  }

  get best() {
    let best = null;
    for (const s of this.samples) if (best === null || s.rtt < best.rtt) best = s;
    return best;
  }

  get offset() {
    const best = this.best;
    if (best) return best.offset;
    return this.rough ?? 0;
  }

  get rtt() {
    const best = this.best;
    return best ? best.rtt : null;
  }

  serverNow() {
    return localNow() + this.offset;
  }
}
