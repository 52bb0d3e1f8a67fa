// BERT WordPiece tokenizer with character offsets, equal to the Python runtime's (the `tokenizers` library):
// a port of android_demo/core's pocketbert.core.text, which the test suite holds to the same golden
// vectors and fuzz texts. Offsets are code-point indices (as Python counts) and UTF-16 indices (as
// JavaScript strings count, for highlighting).

// A text whose every code point remembers the original span [start, end) it came from.
class Aligned {
  constructor(cps, starts, ends, origin) {
    Object.assign(this, { cps, starts, ends, origin });
  }

  static original(cps, from, to) {
    const n = to - from;
    const starts = new Array(n), ends = new Array(n);
    for (let i = 0; i < n; i++) { starts[i] = from + i; ends[i] = from + i + 1; }
    return new Aligned(cps.slice(from, to), starts, ends, from);
  }

  edit() {
    return new Editor(this);
  }
}

// Builds a new Aligned from an old one, consuming its code points in order.
class Editor {
  constructor(source) {
    this.source = source;
    this.consumed = 0;
    this.cps = []; this.starts = []; this.ends = [];
  }

  replace(cp) {
    const s = this.source;
    this.push(cp, s.starts[this.consumed], s.ends[this.consumed]);
    this.consumed++;
  }

  insert(cp) { // an added code point takes the span of the one before it
    const s = this.source;
    if (this.consumed === 0) this.push(cp, s.origin, s.origin);
    else this.push(cp, s.starts[this.consumed - 1], s.ends[this.consumed - 1]);
  }

  remove() {
    this.consumed++;
  }

  push(cp, start, end) {
    this.cps.push(cp); this.starts.push(start); this.ends.push(end);
  }

  build() {
    if (this.consumed !== this.source.cps.length) throw new Error('an edit must consume the whole text');
    return new Aligned(this.cps, this.starts, this.ends, this.source.origin);
  }
}

function decomposed(text, tables) { // canonical decomposition (NFD), marks reordered by combining class
  const items = [];
  for (const cp of text.cps) {
    const parts = tables.decompose(cp);
    if (parts === null) items.push([cp, tables.combiningClass(cp), false]);
    else parts.forEach((p, j) => items.push([p, tables.combiningClass(p), j > 0]));
  }
  for (let i = 0; i < items.length;) { // stable insertion sort of each run of non-starters
    if (items[i][1] === 0) { i++; continue; }
    let end = i;
    while (end < items.length && items[end][1] !== 0) end++;
    for (let a = i + 1; a < end; a++) {
      const item = items[a];
      let b = a - 1;
      while (b >= i && items[b][1] > item[1]) { items[b + 1] = items[b]; b--; }
      items[b + 1] = item;
    }
    i = end;
  }
  const out = text.edit();
  for (const [cp, , inserted] of items) {
    if (inserted) out.insert(cp); else out.replace(cp);
  }
  return out.build();
}

function normalize(text, settings, tables) { // BertNormalizer: clean, CJK spacing, accents, lower case
  let out;
  if (settings.clean_text) {
    out = text.edit();
    for (const cp of text.cps) {
      if (tables.removed.has(cp)) out.remove(); else out.replace(tables.whitespace.has(cp) ? 0x20 : cp);
    }
    text = out.build();
  }
  if (settings.tokenize_chinese_chars) {
    out = text.edit();
    for (const cp of text.cps) {
      if (tables.chinese.has(cp)) { out.insert(0x20); out.replace(cp); out.insert(0x20); } else out.replace(cp);
    }
    text = out.build();
  }
  if (settings.strip_accents) {
    text = decomposed(text, tables);
    out = text.edit();
    for (const cp of text.cps) {
      if (tables.nonspacingMark.has(cp)) out.remove(); else out.replace(cp);
    }
    text = out.build();
  }
  if (settings.do_lower_case) {
    out = text.edit();
    for (const cp of text.cps) {
      const lower = tables.lowercase(cp);
      out.replace(lower[0]);
      for (let j = 1; j < lower.length; j++) out.insert(lower[j]);
    }
    text = out.build();
  }
  return text;
}

function words(text, tables) { // BertPreTokenizer: split on whitespace, each punctuation mark a word
  const out = [];
  let start = -1;
  text.cps.forEach((cp, i) => {
    const space = tables.whitespace.has(cp);
    const punctuation = !space && tables.punctuation.has(cp);
    if (space || punctuation) {
      if (start >= 0) { out.push([start, i]); start = -1; }
      if (punctuation) out.push([i, i + 1]);
    } else if (start < 0) {
      start = i;
    }
  });
  if (start >= 0) out.push([start, text.cps.length]);
  return out;
}

const CLEANUP = [[' .', '.'], [' ?', '?'], [' !', '!'], [' ,', ','], [' \' ', '\''], [' n\'t', 'n\'t'],
  [' \'m', '\'m'], [' do not', ' don\'t'], [' \'s', '\'s'], [' \'ve', '\'ve'], [' \'re', '\'re']];

/** Hugging Face's WordPiece decoder (cleanup on): "##" pieces glued, others joined by spaces. */
export function detokenize(tokens, prefix = '##') {
  return tokens.map((token, i) => {
    let t = i === 0 ? token : token.startsWith(prefix) ? token.slice(prefix.length) : ` ${token}`;
    for (const [a, b] of CLEANUP) t = t.split(a).join(b);
    return t;
  }).join('');
}

/** Code points of a string and the UTF-16 index of each (utf16[n] = text.length). */
export function indexText(text) {
  const cps = [], utf16 = [];
  for (let unit = 0; unit < text.length;) {
    const cp = text.codePointAt(unit);
    if (cp >= 0xd800 && cp <= 0xdfff) {
      throw new Error(`the text contains a lone surrogate U+${cp.toString(16).toUpperCase()} at UTF-16 index ${unit}`);
    }
    cps.push(cp); utf16.push(unit);
    unit += cp > 0xffff ? 2 : 1;
  }
  utf16.push(text.length);
  return { cps, utf16 };
}

export class WordPieceTokenizer {
  /** vocab: the lines of vocab.txt; settings: the manifest's `tokenizer` object. */
  constructor(vocab, settings, tables) {
    if ((settings.type ?? 'wordpiece') !== 'wordpiece') throw new Error(`not a WordPiece tokenizer: ${settings.type}`);
    this.settings = settings;
    this.tables = tables;
    this.vocab = vocab;
    this.ids = new Map(vocab.map((t, i) => [t, i]));
    this.longest = Math.max(...vocab.map((t) => [...t].length));
    this.prefix = settings.continuing_subword_prefix ?? '##';
    this.maxWord = settings.max_input_chars_per_word ?? 100;
    const special = settings.special_tokens ?? {};
    for (const [name, entry] of Object.entries(special)) {
      if (this.ids.get(entry.token) !== entry.id) {
        throw new Error(`the manifest gives ${entry.token} (${name}) id ${entry.id}, but vocab.txt does not`);
      }
    }
    for (const name of ['unk', 'cls', 'sep']) {
      if (!special[name]) throw new Error(`the manifest's tokenizer has no ${name} special token`);
    }
    this.unk = special.unk; this.cls = special.cls; this.sep = special.sep;
    this.padId = special.pad ? special.pad.id : 0;
    const unique = new Map(Object.values(special).map((s) => [s.token, s]));
    this.specials = [...unique.values()].map((s) => ({ ...s, cps: [...s.token].map((c) => c.codePointAt(0)) }));
    this.wordAware = this.prefix.length > 0;
  }

  /** Text tokens (no [CLS]/[SEP]): {ids, tokens, offsets (code points), special (0: typed in the text)}. */
  tokenize(text) {
    const { cps } = indexText(text);
    const out = { ids: [], tokens: [], offsets: [] };
    let start = 0;
    for (const [from, to, special] of this.findSpecials(cps)) {
      this.piece(cps, start, from, out);
      this.add(out, special.id, special.token, from, to);
      start = to;
    }
    this.piece(cps, start, cps.length, out);
    return out;
  }

  findSpecials(cps) { // typed special tokens are matched whole, longest first, left to right
    const matches = [];
    for (let i = 0; i < cps.length;) {
      let best = null;
      for (const s of this.specials) {
        if ((!best || s.cps.length > best.cps.length) && s.cps.every((c, j) => cps[i + j] === c)) best = s;
      }
      if (best) { matches.push([i, i + best.cps.length, best]); i += best.cps.length; } else i++;
    }
    return matches;
  }

  piece(cps, from, to, out) {
    if (from === to) return;
    const text = normalize(Aligned.original(cps, from, to), this.settings, this.tables);
    for (const [a, b] of words(text, this.tables)) this.wordPiece(text, a, b, out);
  }

  wordPiece(text, from, to, out) { // greedy longest match; a word with an unknown piece is one [UNK]
    if (to - from > this.maxWord) {
      this.add(out, this.unk.id, this.unk.token, text.starts[from], text.ends[to - 1]);
      return;
    }
    const mark = out.ids.length;
    for (let start = from; start < to;) {
      let end = Math.min(to, start + this.longest), id;
      let piece = null;
      for (; start < end; end--) {
        const candidate = (start > from ? this.prefix : '') + String.fromCodePoint(...text.cps.slice(start, end));
        id = this.ids.get(candidate);
        if (id !== undefined) { piece = candidate; break; }
      }
      if (piece === null) {
        out.ids.length = out.tokens.length = out.offsets.length = mark;
        this.add(out, this.unk.id, this.unk.token, text.starts[from], text.ends[to - 1]);
        return;
      }
      this.add(out, id, piece, text.starts[start], text.ends[end - 1]);
      start = end;
    }
  }

  add(out, id, token, start, end) {
    out.ids.push(id); out.tokens.push(token); out.offsets.push([start, end]);
  }

  /** One model row: [CLS] tokens[from:to] [SEP], with offsets in code points and UTF-16 units. */
  row(tokens, from, to, utf16) {
    const n = to - from;
    const offsets = [[0, 0], ...tokens.offsets.slice(from, to), [0, 0]];
    return {
      input_ids: [this.cls.id, ...tokens.ids.slice(from, to), this.sep.id],
      tokens: [this.cls.token, ...tokens.tokens.slice(from, to), this.sep.token],
      token_type_ids: new Array(n + 2).fill(0),
      attention_mask: new Array(n + 2).fill(1),
      special_tokens_mask: [1, ...new Array(n).fill(0), 1],
      offsets,
      offsets_utf16: offsets.map(([a, b], i) => (i === 0 || i === n + 1 ? [0, 0] : [utf16[a], utf16[b]])),
    };
  }

  /** A single text truncated to maxLength tokens (specials included): one row, and whether it was cut. */
  encode(text, maxLength) {
    const tokens = this.tokenize(text);
    const keep = Math.min(tokens.ids.length, maxLength - 2);
    return { ...this.row(tokens, 0, keep, indexText(text).utf16), truncated: keep < tokens.ids.length };
  }

  /** A sentence pair: [CLS] a [SEP] b [SEP], cut to maxLength tokens longest first (Hugging Face's rule);
   * token type 0 for the first text, 1 for the second; offsets into each text. */
  encodePair(a, b, maxLength) {
    const ta = this.tokenize(a), tb = this.tokenize(b);
    const [na, nb] = longestFirst(ta.ids.length, tb.ids.length, maxLength - 3);
    const first = this.row(ta, 0, na, indexText(a).utf16);
    const second = this.row(tb, 0, nb, indexText(b).utf16);
    const tail = (key) => second[key].slice(1);
    return {
      input_ids: [...first.input_ids, ...tail('input_ids')],
      tokens: [...first.tokens, ...tail('tokens')],
      token_type_ids: [...first.token_type_ids, ...new Array(nb + 1).fill(1)],
      attention_mask: new Array(na + nb + 3).fill(1),
      special_tokens_mask: [...first.special_tokens_mask, ...tail('special_tokens_mask')],
      offsets: [...first.offsets, ...tail('offsets')],
      offsets_utf16: [...first.offsets_utf16, ...tail('offsets_utf16')],
      truncated: na < ta.ids.length || nb < tb.ids.length,
    };
  }

  /** A text cut into windows of maxLength tokens sharing `stride` tokens (the runtime's rule). */
  windows(text, maxLength, stride) {
    const content = maxLength - 2;
    if (!(stride >= 0 && stride < content)) throw new Error(`stride ${stride} must be ≥ 0 and below ${content}`);
    const tokens = this.tokenize(text);
    const { utf16 } = indexText(text);
    return windowStarts(tokens.ids.length, content, stride)
      .map((start) => this.row(tokens, start, Math.min(start + content, tokens.ids.length), utf16));
  }

  detokenize(tokens) {
    return detokenize(tokens, this.prefix);
  }
}

/** Tokens kept of a pair of n1 and n2 tokens within `budget`: the `tokenizers` library's longest_first
 * (utils/truncation.rs): only the longer text is cut if that suffices, else both to half the budget. */
export function longestFirst(n1, n2, budget) {
  if (n1 + n2 <= budget) return [n1, n2];
  const swap = n1 > n2;
  let [short, long] = swap ? [n2, n1] : [n1, n2];
  long = short > budget ? short : Math.max(short, budget - short);
  if (short + long > budget) {
    short = Math.floor(budget / 2);
    long = short + (budget % 2);
  }
  return swap ? [long, short] : [short, long];
}

/** Index (into the text's tokens) of each window's first token: runtime/windows.py window_starts. */
export function windowStarts(numTokens, content, stride) {
  if (numTokens <= content) return [0];
  const starts = [];
  for (let start = 0; start < numTokens; start += content - stride) {
    starts.push(start);
    if (start + content >= numTokens) break;
  }
  return starts;
}

/** A quarter of the window overlaps its neighbour (runtime/windows.py default_stride). */
export function defaultStride(maxLength) {
  return Math.max(0, Math.floor(maxLength / 4));
}
