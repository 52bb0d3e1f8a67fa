package pocketbert.core.ner;

import java.util.Locale;

/**
 * One result of token classification. With {@link Aggregation#NONE} it is a token: Hugging Face's
 * {@code {entity, score, index, word, start, end}} ({@link #label()} is the full label such as
 * {@code B-PER}); otherwise a group: {@code {entity_group, score, word, start, end}} ({@link #label()}
 * is the tag, {@code PER}; {@link #index()} is -1). Offsets are {@code [start, end)} into the text,
 * in code points (as Python counts) and in UTF-16 units (for Java/Kotlin strings and Android spans).
 */
public final class Entity {
    private final String label;
    private final double score;
    private final int index;
    private final String word;
    private final int start;
    private final int end;
    private final int startUtf16;
    private final int endUtf16;
    private final boolean grouped;

    public Entity(String label, double score, int index, String word, int start, int end, int startUtf16, int endUtf16,
                  boolean grouped) {
        this.label = label;
        this.score = score;
        this.index = index;
        this.word = word;
        this.start = start;
        this.end = end;
        this.startUtf16 = startUtf16;
        this.endUtf16 = endUtf16;
        this.grouped = grouped;
    }

    /** {@code entity} of a token result, {@code entity_group} of a group. */
    public String label() {
        return label;
    }

    public double score() {
        return score;
    }

    /** Token index in the whole text (specials included) for {@link Aggregation#NONE}; -1 for groups. */
    public int index() {
        return index;
    }

    public String word() {
        return word;
    }

    public int start() {
        return start;
    }

    public int end() {
        return end;
    }

    public int startUtf16() {
        return startUtf16;
    }

    public int endUtf16() {
        return endUtf16;
    }

    /** True for {@code entity_group} results (every aggregation but none). */
    public boolean grouped() {
        return grouped;
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s %.4f %s [%d, %d)%s", label, score, word, start, end,
                grouped ? "" : " #" + index);
    }
}
