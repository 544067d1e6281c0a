// A QR code made in the page (ISO/IEC 18004): the venue has no internet, so nothing is
// fetched. Byte mode (UTF-8), error correction level M (15 % of the code may be lost to a
// glare or a crease), versions 1 to 15: up to 412 bytes, far more than a console link with
// its token (about 120). Drawn as SVG with its quiet zone of 4 modules.
//
// The steps, as the standard gives them: the data bits (mode, count, bytes, terminator,
// pad), split into blocks with Reed-Solomon error correction over GF(256), interleaved,
// placed in the zigzag around the function patterns, then the mask of the eight that the
// standard's penalty rates lowest, with the format (and, from version 7, version) bits.

const MAX_VERSION = 15;
// Level M per version: [EC codewords per block, blocks of group 1, data codewords in each,
// blocks of group 2 (one data codeword more each)].
const BLOCKS_M = [null,
  [10, 1, 16, 0], [16, 1, 28, 0], [26, 1, 44, 0], [18, 2, 32, 0], [24, 2, 43, 0],
  [16, 4, 27, 0], [18, 4, 31, 0], [22, 2, 38, 2], [22, 3, 36, 2], [26, 4, 43, 1],
  [30, 1, 50, 4], [22, 6, 36, 2], [22, 8, 37, 1], [24, 4, 40, 5], [24, 5, 41, 5]];
const EC_LEVEL_M = 0b00; // its two bits in the format information

// -- GF(256) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 --------------------------------------
const EXP = new Uint8Array(512);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = x;
  LOG[x] = i;
  x <<= 1;
  if (x & 0x100) x ^= 0x11d;
}
for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255];

function gfMul(a, b) {
  return a === 0 || b === 0 ? 0 : EXP[LOG[a] + LOG[b]];
}

/** The generator polynomial of ``degree`` (its leading 1 left out), highest power first. */
function rsGenerator(degree) {
  const poly = new Array(degree).fill(0);
  poly[degree - 1] = 1;
  let root = 1; // alpha^0, then alpha^1 ...
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      poly[j] = gfMul(poly[j], root);
      if (j + 1 < degree) poly[j] ^= poly[j + 1];
    }
    root = gfMul(root, 0x02);
  }
  return poly;
}

/** The error correction codewords of ``data``: the remainder of data * x^n by the generator. */
function rsRemainder(data, generator) {
  const rest = new Array(generator.length).fill(0);
  for (const byte of data) {
    const factor = byte ^ rest.shift();
    rest.push(0);
    for (let i = 0; i < rest.length; i++) rest[i] ^= gfMul(generator[i], factor);
  }
  return rest;
}

// -- versions ---------------------------------------------------------------------------------
function dataCodewords(version) {
  const [, n1, d1, n2] = BLOCKS_M[version];
  return n1 * d1 + n2 * (d1 + 1);
}

function countBits(version) {
  return version <= 9 ? 8 : 16; // byte mode's character count
}

function alignmentCentres(version) {
  if (version === 1) return [];
  const size = version * 4 + 17;
  const count = Math.floor(version / 7) + 2;
  const step = Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const centres = [6];
  for (let at = size - 7; centres.length < count; at -= step) centres.splice(1, 0, at);
  return centres;
}

// -- the data ---------------------------------------------------------------------------------
function dataBits(bytes, version) {
  const bits = [];
  const put = (value, length) => {
    for (let i = length - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  put(0b0100, 4); // byte mode
  put(bytes.length, countBits(version));
  for (const b of bytes) put(b, 8);
  const capacity = dataCodewords(version) * 8;
  put(0, Math.min(4, capacity - bits.length)); // terminator
  put(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) put(pad, 8);
  const codewords = [];
  for (let i = 0; i < bits.length; i += 8) {
    codewords.push(bits.slice(i, i + 8).reduce((v, bit) => (v << 1) | bit, 0));
  }
  return codewords;
}

/** Data and error correction codewords, block by block, interleaved as the symbol holds them. */
function interleaved(codewords, version) {
  const [ecLength, n1, d1, n2] = BLOCKS_M[version];
  const generator = rsGenerator(ecLength);
  const blocks = [];
  let at = 0;
  for (let b = 0; b < n1 + n2; b++) {
    const length = b < n1 ? d1 : d1 + 1;
    const data = codewords.slice(at, at + length);
    at += length;
    blocks.push({ data, ec: rsRemainder(data, generator) });
  }
  const out = [];
  for (let i = 0; i <= d1; i++) for (const block of blocks) if (i < block.data.length) out.push(block.data[i]);
  for (let i = 0; i < ecLength; i++) for (const block of blocks) out.push(block.ec[i]);
  return out;
}

// -- the symbol -------------------------------------------------------------------------------
class Symbol {
  constructor(version) {
    this.version = version;
    this.size = version * 4 + 17;
    this.dark = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    this.fixed = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
  }

  set(x, y, dark) {
    this.dark[y][x] = dark;
    this.fixed[y][x] = true;
  }

  drawFunctionPatterns() {
    const { size } = this;
    for (let i = 0; i < size; i++) { // timing patterns
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) this.finder(cx, cy);
    const centres = alignmentCentres(this.version);
    const last = centres.length - 1;
    for (let i = 0; i <= last; i++) {
      for (let j = 0; j <= last; j++) {
        const onFinder = (i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0);
        if (!onFinder) this.alignment(centres[i], centres[j]);
      }
    }
    this.drawFormat(0); // reserved now, written with the chosen mask
    this.drawVersion();
  }

  finder(cx, cy) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const x = cx + dx;
        const y = cy + dy;
        if (x < 0 || y < 0 || x >= this.size || y >= this.size) continue;
        const ring = Math.max(Math.abs(dx), Math.abs(dy)); // 4: the separator
        this.set(x, y, ring !== 2 && ring !== 4);
      }
    }
  }

  alignment(cx, cy) {
    for (let dy = -2; dy <= 2; dy++) {
      for (let dx = -2; dx <= 2; dx++) this.set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
    }
  }

  drawFormat(mask) {
    const data = (EC_LEVEL_M << 3) | mask;
    let rem = data;
    for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
    const bits = ((data << 10) | rem) ^ 0x5412;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    const { size } = this;
    for (let i = 0; i <= 5; i++) this.set(8, i, bit(i)); // around the top left finder
    this.set(8, 7, bit(6));
    this.set(8, 8, bit(7));
    this.set(7, 8, bit(8));
    for (let i = 9; i < 15; i++) this.set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) this.set(size - 1 - i, 8, bit(i)); // the second copy
    for (let i = 8; i < 15; i++) this.set(8, size - 15 + i, bit(i));
    this.set(8, size - 8, true); // the dark module
  }

  drawVersion() {
    if (this.version < 7) return;
    let rem = this.version;
    for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
    const bits = (this.version << 12) | rem;
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const a = this.size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      this.set(a, b, dark);
      this.set(b, a, dark);
    }
  }

  /** The codewords in the zigzag: two columns at a time from the right, up then down. */
  place(codewords) {
    const { size } = this;
    let i = 0;
    const total = codewords.length * 8;
    for (let right = size - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5; // the vertical timing pattern's column is skipped
      for (let k = 0; k < size; k++) {
        for (let j = 0; j < 2; j++) {
          const x = right - j;
          const upward = ((right + 1) & 2) === 0;
          const y = upward ? size - 1 - k : k;
          if (this.fixed[y][x]) continue;
          if (i < total) this.dark[y][x] = ((codewords[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
          i++; // the remainder bits stay light
        }
      }
    }
  }

  applyMask(mask) {
    const rule = MASKS[mask];
    for (let y = 0; y < this.size; y++) {
      for (let x = 0; x < this.size; x++) if (!this.fixed[y][x] && rule(x, y)) this.dark[y][x] = !this.dark[y][x];
    }
  }

  penalty() {
    const { size, dark } = this;
    let score = 0;
    const FINDER_A = [1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0];
    const FINDER_B = [0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1];
    const line = new Uint8Array(size);
    const rate = () => { // runs of five or more, and finder-like patterns, in one line
      let total = 0;
      let run = 1;
      for (let b = 1; b <= size; b++) {
        if (b < size && line[b] === line[b - 1]) { run++; continue; }
        if (run >= 5) total += 3 + run - 5;
        run = 1;
      }
      for (let b = 0; b + 11 <= size; b++) {
        let a = true;
        let c = true;
        for (let k = 0; k < 11 && (a || c); k++) {
          a &&= line[b + k] === FINDER_A[k];
          c &&= line[b + k] === FINDER_B[k];
        }
        if (a) total += 40;
        if (c) total += 40;
      }
      return total;
    };
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) line[x] = dark[y][x] ? 1 : 0;
      score += rate();
    }
    for (let x = 0; x < size; x++) {
      for (let y = 0; y < size; y++) line[y] = dark[y][x] ? 1 : 0;
      score += rate();
    }
    let darkCount = 0;
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        if (dark[y][x]) darkCount++;
        if (x + 1 < size && y + 1 < size) {
          const c = dark[y][x];
          if (c === dark[y][x + 1] && c === dark[y + 1][x] && c === dark[y + 1][x + 1]) score += 3;
        }
      }
    }
    const all = size * size;
    score += (Math.ceil(Math.abs(darkCount * 20 - all * 10) / all) - 1) * 10;
    return score;
  }
}

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

/** The modules of ``text``'s QR code: rows of booleans (true: dark), without the quiet zone.
 * ``mask``: force one (0-7; the tests); otherwise the lowest penalty's. Throws when the text
 * is longer than version 15 holds. */
export function qrModules(text, { mask = null } = {}) {
  const bytes = new TextEncoder().encode(text);
  let version = 1;
  while (version <= MAX_VERSION && 4 + countBits(version) + bytes.length * 8 > dataCodewords(version) * 8) version++;
  if (version > MAX_VERSION) throw new RangeError(`QR: ${bytes.length} bytes is more than version ${MAX_VERSION} holds`);
  const codewords = interleaved(dataBits(bytes, version), version);
  let best = null;
  for (let m = 0; m < 8; m++) {
    if (mask !== null && m !== mask) continue;
    const symbol = new Symbol(version);
    symbol.drawFunctionPatterns();
    symbol.place(codewords);
    symbol.applyMask(m);
    symbol.drawFormat(m);
    const score = mask === null ? symbol.penalty() : 0;
    if (!best || score < best.score) best = { symbol, score };
  }
  return best.symbol.dark.map((row) => row.slice());
}

const SVG = "http://www.w3.org/2000/svg";

/** An <svg> of ``text``'s QR code (dark on white, with its quiet zone), titled ``label``. */
export function qrSvg(text, label) {
  const modules = qrModules(text);
  const quiet = 4;
  const size = modules.length + quiet * 2;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("shape-rendering", "crispEdges");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.dataset.modules = String(modules.length);
  const background = document.createElementNS(SVG, "rect");
  background.setAttribute("width", String(size));
  background.setAttribute("height", String(size));
  background.setAttribute("fill", "#fff");
  const path = document.createElementNS(SVG, "path");
  let d = "";
  modules.forEach((row, y) => row.forEach((dark, x) => {
    if (dark) d += `M${x + quiet} ${y + quiet}h1v1h-1z`;
  }));
  path.setAttribute("d", d);
  path.setAttribute("fill", "#000");
  svg.append(background, path);
  return svg;
}
