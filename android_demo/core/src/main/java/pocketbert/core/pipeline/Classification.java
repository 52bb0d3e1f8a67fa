package pocketbert.core.pipeline;

import java.util.Collections;
import java.util.List;
import pocketbert.core.classification.LabelScore;
import pocketbert.core.classification.Ranking;

/** The result of classifying one text or pair: logits, scores, all labels ranked, and whether the input was cut. */
public final class Classification {
    private final float[] logits;
    private final float[] scores;
    private final List<String> labels;
    private final boolean truncated;

    Classification(float[] logits, float[] scores, List<String> labels, boolean truncated) {
        this.logits = logits;
        this.scores = scores;
        this.labels = Collections.unmodifiableList(labels);
        this.truncated = truncated;
    }

    /** The best label, what Hugging Face returns without {@code top_k}. */
    public LabelScore best() {
        return Ranking.best(scores, labels);
    }

    /** The {@code k} best labels, best first ({@code null}: all). */
    public List<LabelScore> top(Integer k) {
        return Ranking.top(scores, labels, k);
    }

    public float[] logits() {
        return logits.clone();
    }

    public float[] scores() {
        return scores.clone();
    }

    /** True if the input was longer than the model's maximum and was cut ({@code longest_first} for pairs). */
    public boolean truncated() {
        return truncated;
    }
}
