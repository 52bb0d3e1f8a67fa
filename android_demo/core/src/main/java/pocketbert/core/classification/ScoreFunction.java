package pocketbert.core.classification;

/**
 * Logits to scores, in float32 as the Python runtime and Hugging Face compute them (numpy float32):
 * softmax (single-label), sigmoid (multi-label, or one logit without a problem type), or the raw
 * logit (regression). Results can differ from numpy's in the last bits of a float (its {@code exp} is
 * not Java's); the golden vectors allow 1e-6.
 */
public enum ScoreFunction {
    SOFTMAX {
        @Override
        public float[] apply(float[] logits) {
            float max = Float.NEGATIVE_INFINITY;
            for (float x : logits) {
                max = Math.max(max, x);
            }
            float[] out = new float[logits.length];
            float sum = 0f;
            for (int i = 0; i < logits.length; i++) {
                out[i] = (float) Math.exp(logits[i] - max);
                sum += out[i];
            }
            for (int i = 0; i < out.length; i++) {
                out[i] /= sum;
            }
            return out;
        }
    },
    SIGMOID {
        @Override
        public float[] apply(float[] logits) {
            float[] out = new float[logits.length];
            for (int i = 0; i < logits.length; i++) {
                out[i] = 1f / (1f + (float) Math.exp(-logits[i]));
            }
            return out;
        }
    },
    NONE {
        @Override
        public float[] apply(float[] logits) {
            return logits.clone();
        }
    };

    /** Scores of one row of logits. */
    public abstract float[] apply(float[] logits);

    /**
     * Hugging Face's default for a problem type (the manifest's {@code problem_type}; null if unset):
     * regression → none; multi-label, or a single label → sigmoid; otherwise softmax.
     */
    public static ScoreFunction forProblemType(String problemType, int numLabels) {
        if ("regression".equals(problemType)) {
            return NONE;
        }
        if ("multi_label_classification".equals(problemType) || numLabels == 1) {
            return SIGMOID;
        }
        return SOFTMAX;
    }
}
