// MediaPipe Tasks' TextClassifier on a single-bucket TFLite file of ours (its metadata carries the tokenizer).
import { FilesetResolver, TextClassifier } from '@mediapipe/tasks-text';
import { start } from './harness.js';

start(async (spec) => {
  if (spec.threads !== 1) throw new Error('MediaPipe Tasks text offers no thread setting');
  const fileset = await FilesetResolver.forTextTasks(new URL('/mediapipe/', location.href).href);
  const classifier = await TextClassifier.createFromOptions(fileset, { baseOptions: { modelAssetPath: spec.model_url } });
  return {
    info: { threads: 1 },
    answer: async (text) => {
      const [head] = classifier.classify(text).classifications;
      return head.categories.reduce((a, b) => (b.score > a.score ? b : a)).categoryName;
    },
  };
});
