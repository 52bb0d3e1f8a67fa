// Compiled by `tsc -p types/tsconfig.json` (never run): the ten lines a developer writes type-check, and
// misuse does not.
import { BundleError, pipeline, type Entity, type LabelScore } from 'pocketbert';
import { pocketbertWasm } from 'pocketbert/esbuild';

export async function usage(): Promise<void> {
  const ner = await pipeline('/models/ner-phone/', { task: 'ner', threads: 1 });
  const entities: Entity[] = await ner('Jeff Dean works at Google.', { aggregation: 'first' });
  const first: number = entities[0].start16;
  const classify = await pipeline('/models/sst2-phone/', { task: 'text-classification', precision: 'int4-dynamic',
    expectedSha256: 'sha256:' + '0'.repeat(64) });
  const labels: LabelScore[] = await classify(['A premise.', 'A hypothesis.'], { topK: null });
  const build: string = classify.info.runtime.file;
  const threaded: boolean = ner.info.runtime.threaded;
  const row = classify.tokenizer.encode('A text to time.', classify.maxLength);
  const logits = await classify.model.run(row, classify.task);
  void [row.input_ids.length, logits, classify.bundle.pin];
  ner.dispose();
  classify.dispose();
  void [first, labels, build, threaded, pocketbertWasm({ folder: 'wasm' }).name];
  try {
    await pipeline('/missing/');
  } catch (err) {
    if (err instanceof BundleError) console.log(err.problem, err.fix);
  }
  // @ts-expect-error: aggregation is one of Hugging Face's five
  await ner('text', { aggregation: 'longest' });
  // @ts-expect-error: a classification pipeline takes a text or a pair, not three texts
  await classify(['a', 'b', 'c']);
}
