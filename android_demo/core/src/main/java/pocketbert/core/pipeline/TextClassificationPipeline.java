package pocketbert.core.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import pocketbert.core.classification.ScoreFunction;
import pocketbert.core.text.Encoding;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * Text or sentence pair → labels with scores, as the Python runtime's {@code TextClassificationPipeline}:
 * inputs longer than the maximum are truncated ({@code longest_first} for pairs); scores follow the
 * manifest's {@code problem_type} ({@link ScoreFunction#forProblemType}).
 */
public final class TextClassificationPipeline {
    private final WordPieceTokenizer tokenizer;
    private final BucketedModel model;
    private final List<String> labels;
    private final ScoreFunction function;
    private final int maxLength;

    TextClassificationPipeline(WordPieceTokenizer tokenizer, BucketedModel model, List<String> labels,
                               String problemType, int maxLength) {
        this.tokenizer = tokenizer;
        this.model = model;
        this.labels = Collections.unmodifiableList(new ArrayList<>(labels));
        this.function = ScoreFunction.forProblemType(problemType, labels.size());
        this.maxLength = maxLength;
    }

    public Classification classify(String text) {
        return classify(tokenizer.encode(text, maxLength));
    }

    public Classification classifyPair(String text, String textPair) {
        return classify(tokenizer.encodePair(text, textPair, maxLength));
    }

    private Classification classify(Encoding row) {
        float[] logits = model.run(row)[0];
        return new Classification(logits, function.apply(logits), labels, row.truncated());
    }

    public int maxLength() {
        return maxLength;
    }

    public List<String> labels() {
        return labels;
    }

    public ScoreFunction scoreFunction() {
        return function;
    }
}
