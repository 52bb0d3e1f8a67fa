// Token classification decoding: runtime/ner.py (Hugging Face's token-classification pipeline) step by step.
// Offsets are code-point indices into the text, as the runtime gives them.

export const AGGREGATIONS = ['none', 'simple', 'first', 'average', 'max'];

/** Softmax of one row in float32, max-shifted, as the runtime computes it. */
export function softmax(row) {
  const max = Math.max(...row);
  const exps = Float32Array.from(row, (x) => Math.exp(Math.fround(x - max)));
  const sum = Math.fround(exps.reduce((a, b) => Math.fround(a + b), 0));
  return Float32Array.from(exps, (e) => Math.fround(e / sum));
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

const codePointLength = (s) => [...s].length;

/** Non-special tokens: their text span, best label and whether each continues the previous word. */
function tokensOf(cps, window, probs, how) {
  const out = [];
  window.special_tokens_mask.forEach((special, index) => {
    if (special) return;
    let word = window.tokens[index];
    const [start, end] = window.offsets[index];
    let isSubword;
    if (how.unkId !== null && window.input_ids[index] === how.unkId) {
      word = String.fromCodePoint(...cps.slice(start, end));
      isSubword = false;
    } else if (how.wordAware) {
      isSubword = codePointLength(word) !== end - start;
    } else {
      const around = String.fromCodePoint(...cps.slice(Math.max(0, start - 1), start + 1));
      isSubword = start > 0 && !around.includes(' ');
    }
    const label = argmax(probs[index]);
    out.push({ index, word, start, end, isSubword, label, score: probs[index][label] });
  });
  return out;
}

function wordOf(group, aggregation, probs, how) { // the tokens of one word -> one labelled word
  let label, score;
  if (aggregation === 'first' || group.length === 1) {
    ({ label, score } = group[0]);
  } else if (aggregation === 'max') {
    const top = group.reduce((a, t) => (t.score > a.score ? t : a)); // the first of equally confident tokens
    ({ label, score } = top);
  } else if (aggregation === 'average') {
    const mean = new Float32Array(how.labels.length);
    for (let k = 0; k < mean.length; k++) {
      mean[k] = group.reduce((sum, t) => Math.fround(sum + probs[t.index][k]), 0) / group.length;
    }
    label = argmax(mean);
    score = mean[label];
  } else {
    throw new Error(`not a word aggregation: ${aggregation}`);
  }
  return { entity: how.labels[label], score, word: how.detokenize(group.map((t) => t.word)),
    start: group[0].start, end: group.at(-1).end };
}

function wordsOf(tokens, aggregation, probs, how) {
  const words = [];
  let group = [];
  for (const token of tokens) {
    if (group.length && !token.isSubword) { words.push(wordOf(group, aggregation, probs, how)); group = []; }
    group.push(token);
  }
  if (group.length) words.push(wordOf(group, aggregation, probs, how));
  return words;
}

/** `B-PER` -> [B, PER]; `I-PER` -> [I, PER]; a label without prefix continues, like `I-`. */
export function splitTag(label) {
  if (label.startsWith('B-')) return ['B', label.slice(2)];
  if (label.startsWith('I-')) return ['I', label.slice(2)];
  return ['I', label];
}

const tagOf = (entity) => { // Python's label.split('-', 1)[-1]
  const dash = entity.entity.indexOf('-');
  return dash < 0 ? entity.entity : entity.entity.slice(dash + 1);
};

/** Adjacent entities of one tag -> groups; groups whose tag is ignored (`O`) are not kept. */
export function groupEntities(entities, how, ignoreLabels) {
  const groups = [];
  let current = [];
  const close = () => {
    const tag = tagOf(current[0]);
    if (ignoreLabels.includes(tag)) return;
    groups.push({ entity_group: tag, score: current.reduce((s, e) => s + e.score, 0) / current.length,
      word: how.detokenize(current.map((e) => e.word)), start: current[0].start, end: current.at(-1).end });
  };
  for (const entity of entities) {
    if (current.length) {
      const [bi, tag] = splitTag(entity.entity);
      if (tag !== splitTag(current.at(-1).entity)[1] || bi === 'B') { close(); current = []; }
    }
    current.push(entity);
  }
  if (current.length) close();
  return groups;
}

/** Logits [tokens][labels] of one window -> entities. */
export function decode(cps, window, logits, aggregation, how, ignoreLabels = ['O'], indexOffset = 0) {
  const probs = logits.map(softmax);
  const tokens = tokensOf(cps, window, probs, how);
  let entities;
  if (aggregation === 'none' || aggregation === 'simple') {
    entities = tokens.map((t) => ({ entity: how.labels[t.label], score: t.score, index: t.index + indexOffset,
      word: t.word, start: t.start, end: t.end }));
  } else {
    entities = wordsOf(tokens, aggregation, probs, how);
  }
  if (aggregation !== 'none') entities = groupEntities(entities, how, ignoreLabels);
  return entities.filter((e) => !ignoreLabels.includes(e.entity ?? e.entity_group));
}

/** Text tokens of windows (`lengths[k]` each, window k starting `k * step` tokens into the text) -> for each token
 * of the whole text, [window, position among that window's text tokens]: the window where the token lies farthest
 * from an inner edge (a window edge that is not the text's), the earlier one on a tie (runtime/windows.py). */
export function tokenSources(lengths, step) {
  const last = lengths.length - 1;
  const total = Math.max(...lengths.map((length, k) => k * step + length));
  const best = new Array(total).fill(-1);
  const sources = new Array(total).fill(null);
  lengths.forEach((length, k) => {
    for (let j = 0; j < length; j++) {
      const margin = Math.min(k > 0 ? j : Infinity, k < last ? length - 1 - j : Infinity);
      if (margin > best[k * step + j]) { best[k * step + j] = margin; sources[k * step + j] = [k, j]; }
    }
  });
  if (sources.includes(null)) throw new Error(`windows ${step} tokens apart leave tokens uncovered`);
  return sources;
}

/** Windows of one text -> one window of the whole text ([window, row] of each of its rows): the first window's
 * leading specials, every text token from the window tokenSources picks, the last window's trailing specials. */
function stitchedRows(windows, step) {
  const textRows = windows.map((w) => w.special_tokens_mask.flatMap((special, i) => (special ? [] : [i])));
  const rows = [];
  for (let i = 0; i < (textRows[0].length ? textRows[0][0] : 0); i++) rows.push([0, i]);
  for (const [k, j] of tokenSources(textRows.map((r) => r.length), step)) rows.push([k, textRows[k][j]]);
  const last = windows.length - 1, lastRows = textRows[last];
  for (let i = lastRows.length ? lastRows.at(-1) + 1 : 0; i < windows[last].special_tokens_mask.length; i++) {
    rows.push([last, i]);
  }
  return rows;
}

/** All windows of one text -> its entities; `step`: tokens between window starts.  Several windows are stitched
 * into one sequence of the whole text and decoded once: no entity is cut where windows meet (Hugging Face's stride
 * merge decodes windows apart and splits such names), and `index` counts tokens of the whole text. */
export function decodeText(cps, windows, logits, aggregation, how, ignoreLabels = ['O'], step = 0) {
  if (windows.length === 1) return decode(cps, windows[0], logits[0], aggregation, how, ignoreLabels);
  const rows = stitchedRows(windows, step);
  const pick = (field) => rows.map(([k, i]) => windows[k][field][i]);
  const window = { input_ids: pick('input_ids'), tokens: pick('tokens'), offsets: pick('offsets'),
    special_tokens_mask: pick('special_tokens_mask') };
  return decode(cps, window, rows.map(([k, i]) => logits[k][i]), aggregation, how, ignoreLabels);
}
