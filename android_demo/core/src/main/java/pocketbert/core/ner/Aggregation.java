package pocketbert.core.ner;

import java.util.Locale;
import pocketbert.core.InputException;

/**
 * How token predictions become entities, as Hugging Face's token-classification pipeline does it:
 * {@code NONE} one result per token; {@code SIMPLE} adjacent tokens grouped by tag; {@code FIRST},
 * {@code AVERAGE}, {@code MAX} first give each word one label (its first token's, its tokens' mean
 * scores', its most confident token's), then group words.
 */
public enum Aggregation {
    NONE, SIMPLE, FIRST, AVERAGE, MAX;

    /** The lower-case name the Python runtime and the golden vectors use. */
    public String key() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Aggregation of(String key) {
        for (Aggregation a : values()) {
            if (a.key().equals(key)) {
                return a;
            }
        }
        throw new InputException("unknown aggregation '" + key + "'", "use one of: none, simple, first, average, max");
    }
}
