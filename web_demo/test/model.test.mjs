// LiteRT's log routing and the Measure panel's progress: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liteRtLog } from '../src/model.js';
import { timeRuns } from '../src/measure.js';

test('LiteRT\'s log lines go to the console by severity: only ERROR and unknown lines are errors', (t) => {
  const seen = [];
  for (const level of ['debug', 'warn', 'error']) t.mock.method(console, level, (line) => seen.push([level, line]));
  for (const line of ['INFO: [environment.cc:36] Creating LiteRT environment with options', 'VERBOSE: x',
    'INFO: Created TensorFlow Lite XNNPACK delegate for CPU.',
    'WARNING: [npu_registry.cc:34] NPU accelerator could not be loaded', 'ERROR: [compiled_model.cc:1] failed',
    'Aborted(): something', 'INFOrmation without the prefix']) liteRtLog(line);
  assert.deepEqual(seen.map(([level]) => level), ['debug', 'debug', 'debug', 'warn', 'error', 'error', 'error']);
});

test('timeRuns reports progress after every warm-up and timed run', async () => {
  const progress = [];
  const timing = await timeRuns(async () => {}, 2, 3, (done, total) => progress.push([done, total]));
  assert.deepEqual(progress, [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]]);
  assert.equal(timing.warmup.runs, 2);
  assert.equal(timing.timed.runs, 3);
});
