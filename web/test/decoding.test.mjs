// The decoding modules against tests/golden (Hugging Face's results) and their edge cases: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { AGGREGATIONS, decode, decodeText, groupEntities, softmax, tokenSources } from '../src/ner.js';
import { ranked, scoreFunction, scores } from '../src/classification.js';
import { detokenize, defaultStride, windowStarts } from '../src/tokenizer.js';

const GOLDEN = new URL('../../tests/golden/', import.meta.url);
const lines = (name) => readFileSync(new URL(name, GOLDEN), 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const SETTINGS = JSON.parse(readFileSync(new URL('tokenizers.json', GOLDEN), 'utf8'));
const cpsOf = (text) => [...text].map((c) => c.codePointAt(0));
const how = (labels, tokenizer = 'minilm-uncased') => ({ labels, unkId: SETTINGS[tokenizer].special_tokens.unk.id,
  wordAware: true, detokenize });

function assertEntities(got, expected, where) {
  assert.equal(got.length, expected.length, `${where}: ${JSON.stringify(got)}`);
  got.forEach((g, i) => {
    const { score, ...rest } = expected[i];
    const { score: gotScore, ...gotRest } = g;
    assert.deepEqual(gotRest, rest, where);
    assert.ok(Math.abs(gotScore - score) <= 1e-6, `${where}: score ${gotScore} vs ${score}`);
  });
}

test('NER golden vectors: every aggregation gives Hugging Face\'s entities', () => {
  let checked = 0;
  for (const record of lines('ner.jsonl')) {
    const windows = record.windows;
    const step = record.stride === null ? 0 : record.max_length - 2 - record.stride;
    for (const [aggregation, expected] of Object.entries(record.expected)) {
      const got = decodeText(cpsOf(record.text), windows, windows.map((w) => w.logits), aggregation,
        how(record.labels, record.tokenizer), ['O'], step);
      assertEntities(got, expected, `${JSON.stringify(record.text).slice(0, 60)} ${aggregation}`);
      checked++;
    }
  }
  assert.ok(checked >= 150, `only ${checked} golden cases`);
});

test('classification golden vectors: scores and ranking', () => {
  for (const record of lines('classification.jsonl')) {
    const fn = scoreFunction(record.problem_type, record.labels.length);
    const row = scores(record.logits, fn);
    const all = ranked(row, record.labels);
    const check = (got, expected) => got.forEach((g, i) => {
      assert.equal(g.label, expected[i].label);
      assert.ok(Math.abs(g.score - expected[i].score) <= 1e-6, `${g.score} vs ${expected[i].score}`);
    });
    check(all.slice(0, 1), [record.expected.top_k_unset]);
    check(ranked(row, record.labels, 2), record.expected.top_k_2);
    check(all, record.expected.top_k_all);
  }
});

const window = (tokens, offsets) => ({ input_ids: tokens.map((_, i) => i + 1000), tokens, offsets,
  special_tokens_mask: tokens.map((t) => (t === '[CLS]' || t === '[SEP]' ? 1 : 0)) });
const LABELS = ['O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC'];
const oneHot = (label) => LABELS.map((l) => (l === label ? 8 : 0));

test('a stray I- tag starts its own entity, and B- splits two adjacent ones', () => {
  const text = 'ann bob paris';
  const w = window(['[CLS]', 'ann', 'bob', 'paris', '[SEP]'], [[0, 0], [0, 3], [4, 7], [8, 13], [0, 0]]);
  const got = decode(cpsOf(text), w, ['O', 'I-PER', 'B-PER', 'I-LOC', 'O'].map(oneHot), 'simple', how(LABELS));
  assert.deepEqual(got.map((e) => [e.entity_group, e.word, e.start, e.end]),
    [['PER', 'ann', 0, 3], ['PER', 'bob', 4, 7], ['LOC', 'paris', 8, 13]]);
});

test('subwords: first/average/max pick one label per word; simple can split a word', () => {
  const text = 'zurich';
  const w = window(['[CLS]', 'zur', '##ich', '[SEP]'], [[0, 0], [0, 3], [3, 6], [0, 0]]);
  const logits = [oneHot('O'), LABELS.map((l) => (l === 'B-LOC' ? 5 : 0)), oneHot('B-PER'), oneHot('O')];
  const first = decode(cpsOf(text), w, logits, 'first', how(LABELS));
  assert.deepEqual(first.map((e) => [e.entity_group, e.word]), [['LOC', 'zurich']]);
  const max = decode(cpsOf(text), w, logits, 'max', how(LABELS));
  assert.deepEqual(max.map((e) => [e.entity_group, e.word]), [['PER', 'zurich']]);
  const simple = decode(cpsOf(text), w, logits, 'simple', how(LABELS));
  assert.deepEqual(simple.map((e) => [e.entity_group, e.word]), [['LOC', 'zur'], ['PER', '##ich']]);
});

test('[UNK] shows the text it stands for and starts a word; emoji offsets count code points', () => {
  const text = '😀 x';
  const w = { input_ids: [101, 100, 1060, 102], tokens: ['[CLS]', '[UNK]', 'x', '[SEP]'],
    offsets: [[0, 0], [0, 1], [2, 3], [0, 0]], special_tokens_mask: [1, 0, 0, 1] };
  const got = decode(cpsOf(text), w, [oneHot('O'), oneHot('B-PER'), oneHot('I-PER'), oneHot('O')], 'first',
    { ...how(LABELS), unkId: 100 });
  assert.deepEqual(got.map((e) => [e.entity_group, e.word, e.start, e.end]), [['PER', '😀 x', 0, 3]]);
});

test('nothing to decode: no tokens, all O, empty windows', () => {
  const empty = window(['[CLS]', '[SEP]'], [[0, 0], [0, 0]]);
  for (const aggregation of AGGREGATIONS) {
    assert.deepEqual(decode([], empty, [oneHot('O'), oneHot('O')], aggregation, how(LABELS)), []);
  }
  assert.deepEqual(groupEntities([], how(LABELS), ['O']), []);
});

test('window seams: each token comes from the window where it is farthest from a cut', () => {
  // windows of 6, 6 and 4 text tokens, 4 apart: each overlap of 2 is split in its middle
  assert.deepEqual(tokenSources([6, 6, 4], 4).map(([k, j]) => `${k}:${j}`).join(' '),
    '0:0 0:1 0:2 0:3 0:4 1:1 1:2 1:3 1:4 2:1 2:2 2:3');
  assert.throws(() => tokenSources([3, 3], 4), /uncovered/);
});

test('windows start every content - stride tokens and the last reaches the end', () => {
  assert.deepEqual(windowStarts(10, 62, 16), [0]);
  assert.deepEqual(windowStarts(100, 62, 16), [0, 46]);
  assert.deepEqual(windowStarts(108, 62, 16), [0, 46]);
  assert.deepEqual(windowStarts(109, 62, 16), [0, 46, 92]);
  assert.equal(defaultStride(64), 16);
});

test('softmax is float32 and stable for large logits; sigmoid and raw scores', () => {
  const p = softmax([1000, 1000]);
  assert.deepEqual([...p], [0.5, 0.5]);
  assert.ok(p instanceof Float32Array);
  assert.equal(scoreFunction('regression', 1), 'none');
  assert.equal(scoreFunction(null, 1), 'sigmoid');
  assert.equal(scoreFunction('multi_label_classification', 3), 'sigmoid');
  assert.equal(scoreFunction('single_label_classification', 2), 'softmax');
  assert.deepEqual([...scores([0], 'sigmoid')], [0.5]);
  assert.deepEqual(ranked(Float32Array.from([0.2, 0.5, 0.5]), ['a', 'b', 'c']).map((r) => r.label), ['b', 'c', 'a']);
});
