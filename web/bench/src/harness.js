// What every runtime's page does: open the model named in the URL's hash, answer the first text (cold load
// to first result, timed from navigation start), then answer texts and time runs when the driver asks.
export function start(open) {
  const spec = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  const state = {};
  state.ready = (async () => {
    try {
      const runner = await open(spec);
      const first = await runner.answer(spec.first_text);
      state.runner = runner;
      return { cold_ms: performance.now(), first, info: runner.info, isolated: self.crossOriginIsolated };
    } catch (err) {
      return { error: String(err?.message ?? err) };
    }
  })();
  state.answers = async (texts) => {
    const out = [];
    for (const text of texts) out.push(await state.runner.answer(text));
    return out;
  };
  // Milliseconds of each timed call (the whole call: tokenization, model, decoding), after `warmup` untimed ones.
  state.time = async (text, warmup, runs) => {
    for (let i = 0; i < warmup; i++) await state.runner.answer(text);
    const times = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await state.runner.answer(text);
      times.push(performance.now() - t0);
    }
    return times;
  };
  window.bench = state;
}
