package pocketbert.core.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import pocketbert.core.ner.Aggregation;
import pocketbert.core.ner.Entity;
import pocketbert.core.ner.TokenClassificationDecoder;
import pocketbert.core.ner.TokenWindow;
import pocketbert.core.text.Encoding;
import pocketbert.core.text.TextIndex;
import pocketbert.core.text.WordPieceDecoder;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * Text → entities: tokenize, run the model, decode, as the Python runtime's
 * {@code TokenClassificationPipeline}. Texts longer than the maximum run in windows overlapping by
 * {@code stride} tokens (default a quarter of the maximum) whose entities are merged.
 */
public final class TokenClassificationPipeline {
    private static final Set<String> DEFAULT_IGNORE = Collections.singleton("O");
    private final WordPieceTokenizer tokenizer;
    private final BucketedModel model;
    private final List<String> labels;
    private final int maxLength;
    private final WordPieceDecoder detokenizer;

    TokenClassificationPipeline(WordPieceTokenizer tokenizer, BucketedModel model, List<String> labels, int maxLength) {
        this.tokenizer = tokenizer;
        this.model = model;
        this.labels = Collections.unmodifiableList(new ArrayList<>(labels));
        this.maxLength = maxLength;
        this.detokenizer = new WordPieceDecoder(tokenizer.settings().continuingSubwordPrefix());
    }

    public int maxLength() {
        return maxLength;
    }

    /** Tokens two neighbouring windows share by default: a quarter of the maximum. */
    public int defaultStride() {
        return Math.max(0, maxLength / 4);
    }

    public List<String> labels() {
        return labels;
    }

    /** Entities of {@code text}, results labelled {@code O} dropped, default stride. */
    public List<Entity> run(String text, Aggregation aggregation) {
        return run(text, aggregation, defaultStride(), DEFAULT_IGNORE);
    }

    /** Entities of {@code text}: windows overlapping by {@code stride} tokens, results with an ignored label dropped. */
    public List<Entity> run(String text, Aggregation aggregation, int stride, Set<String> ignoreLabels) {
        TextIndex index = TextIndex.of(text);
        List<Encoding> rows = tokenizer.encodeWindows(text, maxLength, stride);
        List<TokenWindow> windows = new ArrayList<>();
        List<float[][]> logits = new ArrayList<>();
        for (Encoding row : rows) {
            windows.add(TokenWindow.of(row));
            logits.add(model.run(row));
        }
        TokenClassificationDecoder decoder = new TokenClassificationDecoder(labels, tokenizer.unk().id(),
                tokenizer.wordAware(), detokenizer, new HashSet<>(ignoreLabels));
        int step = maxLength - 2 - stride;
        return decoder.decodeText(index, windows, logits, aggregation, step);
    }
}
