// Sentence pairs and the embedded Unicode tables of src/tokenizer.js: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WordPieceTokenizer, longestFirst } from '../src/tokenizer.js';
import { unicodeTables } from '../src/pipeline.js';
import { UNICODE_TABLES } from '../src/unicode-tables-text.js';
import { SOURCE } from '../tools/embed-unicode-tables.mjs';

const GOLDEN = new URL('../../tests/golden/', import.meta.url);
const lines = (name) => readFileSync(new URL(name, GOLDEN), 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const SETTINGS = JSON.parse(readFileSync(new URL('tokenizers.json', GOLDEN), 'utf8'));
// the golden vectors' vocabulary (the built-in MiniLM's vocab.txt, an installed Python package's file): the
// pytest run (tests/test_web_package.py) passes its path and requires that nothing is skipped
const VOCAB_PATH = process.env.POCKETBERT_MINILM_VOCAB;

test('the embedded Unicode tables are the Android core\'s generated file (node tools/embed-unicode-tables.mjs)', () => {
  assert.equal(UNICODE_TABLES, readFileSync(SOURCE, 'utf8'));
});

test('longest_first as the tokenizers library cuts pairs', () => {
  assert.deepEqual(longestFirst(3, 4, 10), [3, 4]);
  assert.deepEqual(longestFirst(3, 20, 10), [3, 7]);
  assert.deepEqual(longestFirst(20, 3, 10), [7, 3]);
  assert.deepEqual(longestFirst(8, 9, 10), [5, 5]);
  assert.deepEqual(longestFirst(9, 8, 11), [6, 5]);
  assert.deepEqual(longestFirst(8, 9, 11), [5, 6]);
});

test('sentence pairs tokenize as the runtime\'s golden vectors: ids, token types, masks, offsets',
  { skip: !VOCAB_PATH && 'POCKETBERT_MINILM_VOCAB is not set' }, () => {
  const VOCAB = readFileSync(VOCAB_PATH, 'utf8').split('\n').filter((line, i, all) => line || i < all.length - 1);
  const cases = lines('tokenization.jsonl').filter((c) => c.text_pair !== null && c.tokenizer in SETTINGS);
  assert.ok(cases.length >= 4);
  for (const c of cases) {
    const tokenizer = new WordPieceTokenizer(VOCAB, SETTINGS[c.tokenizer], unicodeTables());
    const row = tokenizer.encodePair(c.text, c.text_pair, c.max_length);
    const [expected] = c.windows;
    for (const key of ['input_ids', 'tokens', 'token_type_ids', 'attention_mask', 'special_tokens_mask', 'offsets']) {
      assert.deepEqual(row[key], expected[key], `${c.text} / ${c.text_pair}: ${key}`);
    }
  }
});
