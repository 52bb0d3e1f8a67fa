// Text classification scores: runtime/classification.py (Hugging Face's text-classification rules).
import { softmax } from './ner.js';

/** softmax | sigmoid | none, by Hugging Face's default rule for the manifest's problem_type. */
export function scoreFunction(problemType, numLabels) {
  if (problemType === 'regression') return 'none';
  if (problemType === 'multi_label_classification' || numLabels === 1) return 'sigmoid';
  return 'softmax';
}

/** One row of logits -> scores, in float32. */
export function scores(logits, fn) {
  if (fn === 'softmax') return softmax(logits);
  if (fn === 'sigmoid') return Float32Array.from(logits, (x) => 1 / (1 + Math.exp(-Math.fround(x))));
  if (fn === 'none') return Float32Array.from(logits);
  throw new Error(`unknown score function ${fn}`);
}

/** Scores -> labels best first (ties keep label order); topK null: all. */
export function ranked(row, labels, topK = null) {
  const order = labels.map((_, i) => i).sort((a, b) => row[b] - row[a] || a - b);
  return order.slice(0, topK ?? labels.length).map((i) => ({ label: labels[i], score: row[i] }));
}
