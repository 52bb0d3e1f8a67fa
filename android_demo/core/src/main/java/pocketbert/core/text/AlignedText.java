package pocketbert.core.text;

import java.util.Arrays;

/**
 * Normalised text: code points, each with the span {@code [start, end)} of the original text's code
 * points it came from. This is Hugging Face {@code tokenizers}' {@code NormalizedString} alignment,
 * per code point instead of per byte: every edit goes through {@link Builder}, whose three operations
 * are the three kinds of change its {@code transform} applies, so token offsets come out identical.
 */
final class AlignedText {
    final int[] codePoints;
    final int[] starts;
    final int[] ends;
    final int length;
    /** Original index where this piece of text begins: the span of a character inserted at its very start. */
    final int origin;

    private AlignedText(int[] codePoints, int[] starts, int[] ends, int length, int origin) {
        this.codePoints = codePoints;
        this.starts = starts;
        this.ends = ends;
        this.length = length;
        this.origin = origin;
    }

    /** {@code text[from, to)} before any normalisation: each code point aligned with itself. */
    static AlignedText original(int[] text, int from, int to) {
        int n = to - from;
        int[] cps = new int[n];
        int[] starts = new int[n];
        int[] ends = new int[n];
        for (int i = 0; i < n; i++) {
            cps[i] = text[from + i];
            starts[i] = from + i;
            ends[i] = from + i + 1;
        }
        return new AlignedText(cps, starts, ends, n, from);
    }

    Builder edit() {
        return new Builder(this);
    }

    /**
     * Builds the next version of a text from the current one, left to right. {@link #replace} consumes
     * one current code point and takes its span; {@link #insert} adds a code point that takes the span
     * of the last consumed one (the piece's start if none was consumed yet); {@link #remove} drops code
     * points. As in {@code NormalizedString::transform}, spans follow positions, not characters: when
     * NFD reorders marks, the n-th replacing code point takes the n-th span.
     */
    static final class Builder {
        private final AlignedText source;
        private int consumed;
        private int[] codePoints;
        private int[] starts;
        private int[] ends;
        private int length;

        private Builder(AlignedText source) {
            this.source = source;
            int capacity = Math.max(4, source.length + source.length / 4);
            codePoints = new int[capacity];
            starts = new int[capacity];
            ends = new int[capacity];
        }

        void replace(int cp) {
            if (consumed >= source.length) {
                throw new IllegalStateException("replacing beyond the end of the text");
            }
            append(cp, source.starts[consumed], source.ends[consumed]);
            consumed++;
        }

        void insert(int cp) {
            if (consumed == 0) {
                append(cp, source.origin, source.origin);
            } else {
                append(cp, source.starts[consumed - 1], source.ends[consumed - 1]);
            }
        }

        void remove(int count) {
            consumed += count;
        }

        AlignedText build() {
            if (consumed != source.length) {
                throw new IllegalStateException("an edit must consume the whole text: " + consumed + " of "
                        + source.length + " code points");
            }
            return new AlignedText(codePoints, starts, ends, length, source.origin);
        }

        private void append(int cp, int start, int end) {
            if (length == codePoints.length) {
                int capacity = length * 2;
                codePoints = Arrays.copyOf(codePoints, capacity);
                starts = Arrays.copyOf(starts, capacity);
                ends = Arrays.copyOf(ends, capacity);
            }
            codePoints[length] = cp;
            starts[length] = start;
            ends[length] = end;
            length++;
        }
    }
}
