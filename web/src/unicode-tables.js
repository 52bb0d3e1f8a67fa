// The tokenizer's Unicode tables (android_demo/core's unicode-tables.txt, probed from the Rust `tokenizers`
// library the Python runtime uses): the browser's own Unicode data differs by version, so it is not used.

const HANGUL_BASE = 0xac00;
const HANGUL_COUNT = 11172;

class Ranges {
  constructor(lo, hi, values) {
    this.lo = Int32Array.from(lo);
    this.hi = Int32Array.from(hi);
    this.values = Int32Array.from(values);
  }

  indexOf(cp) {
    let a = 0, b = this.lo.length - 1, found = -1; // last range starting at or below cp
    while (a <= b) {
      const mid = (a + b) >> 1;
      if (this.lo[mid] <= cp) { found = mid; a = mid + 1; } else { b = mid - 1; }
    }
    return found >= 0 && cp <= this.hi[found] ? found : -1;
  }

  has(cp) {
    return this.indexOf(cp) >= 0;
  }
}

function range(text) {
  const dots = text.indexOf('..');
  if (dots < 0) {
    const cp = parseInt(text, 16);
    return [cp, cp];
  }
  return [parseInt(text.slice(0, dots), 16), parseInt(text.slice(dots + 2), 16)];
}

function ranges(lines, valueOf = () => 0) {
  const lo = [], hi = [], values = [];
  for (const line of lines) {
    const [span, value] = line.split(' ');
    const [a, b] = range(span);
    lo.push(a); hi.push(b); values.push(valueOf(value));
  }
  return new Ranges(lo, hi, values);
}

function mappings(lines) { // "cp: a b c"
  const out = new Map();
  for (const line of lines) {
    const colon = line.indexOf(':');
    out.set(parseInt(line.slice(0, colon), 16), line.slice(colon + 1).trim().split(' ').map((h) => parseInt(h, 16)));
  }
  return out;
}

function sections(text) {
  const out = {};
  let current = null;
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      current = out[line.slice(1, -1)] = [];
    } else if (current === null) {
      throw new Error(`unicode tables: an entry before the first section: ${line}`);
    } else {
      current.push(line);
    }
  }
  for (const name of ['removed', 'whitespace', 'punctuation', 'chinese', 'nonspacing_mark', 'combining_class',
    'decomposition', 'lowercase']) {
    if (!out[name]) throw new Error(`unicode tables: no [${name}] section`);
  }
  return out;
}

export class UnicodeTables {
  constructor(text) {
    const s = sections(text);
    this.removed = ranges(s.removed);
    this.whitespace = ranges(s.whitespace);
    this.punctuation = ranges(s.punctuation);
    this.chinese = ranges(s.chinese);
    this.nonspacingMark = ranges(s.nonspacing_mark);
    this.combining = ranges(s.combining_class, Number);
    this.decomposition = mappings(s.decomposition);
    const runs = s.lowercase.filter((l) => !l.includes(':')); // "lo..hi/step delta"
    this.lowerRuns = ranges(runs.map((l) => l.replace(/\/\d+/, '')), Number);
    this.lowerSteps = runs.map((l) => Number(l.split(' ')[0].split('/')[1]));
    this.lowerMulti = mappings(s.lowercase.filter((l) => l.includes(':')));
  }

  decompose(cp) {
    if (cp >= HANGUL_BASE && cp < HANGUL_BASE + HANGUL_COUNT) {
      const s = cp - HANGUL_BASE;
      const trail = 0x11a7 + (s % 28);
      const lead = [0x1100 + Math.floor(s / 588), 0x1161 + Math.floor((s % 588) / 28)];
      return trail === 0x11a7 ? lead : [...lead, trail];
    }
    return this.decomposition.get(cp) ?? null;
  }

  combiningClass(cp) {
    const i = this.combining.indexOf(cp);
    return i < 0 ? 0 : this.combining.values[i];
  }

  lowercase(cp) {
    const i = this.lowerRuns.indexOf(cp);
    if (i >= 0 && (cp - this.lowerRuns.lo[i]) % this.lowerSteps[i] === 0) return [cp + this.lowerRuns.values[i]];
    return this.lowerMulti.get(cp) ?? [cp];
  }
}
