package pocketbert.core.classification;

/** A label with its score, as Hugging Face's text-classification pipeline returns {@code {label, score}}. */
public final class LabelScore {
    private final String label;
    private final double score;

    public LabelScore(String label, double score) {
        this.label = label;
        this.score = score;
    }

    public String label() {
        return label;
    }

    public double score() {
        return score;
    }

    @Override
    public String toString() {
        return label + "=" + score;
    }
}
