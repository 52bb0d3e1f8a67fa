// The Measure panel's progress: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { timeRuns } from '../src/measure.js';

test('timeRuns reports progress after every warm-up and timed run', async () => {
  const progress = [];
  const timing = await timeRuns(async () => {}, 2, 3, (done, total) => progress.push([done, total]));
  assert.deepEqual(progress, [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]]);
  assert.equal(timing.warmup.runs, 2);
  assert.equal(timing.timed.runs, 3);
});
