package pocketbert.core.text;

import java.util.Arrays;

/**
 * The tokens of one text before {@code [CLS]}/{@code [SEP]} are added and before truncation: ids,
 * vocabulary strings and code point spans into the text. A special token typed in the text is one of
 * them; as in Hugging Face's encodings it is not flagged in the special tokens mask.
 */
public final class TokenSequence {
    private final TextIndex text;
    private final int[] ids;
    private final String[] tokens;
    private final int[] starts;
    private final int[] ends;

    private TokenSequence(TextIndex text, int[] ids, String[] tokens, int[] starts, int[] ends) {
        this.text = text;
        this.ids = ids;
        this.tokens = tokens;
        this.starts = starts;
        this.ends = ends;
    }

    public TextIndex text() {
        return text;
    }

    public int size() {
        return ids.length;
    }

    public int id(int i) {
        return ids[i];
    }

    public String token(int i) {
        return tokens[i];
    }

    /** Code point index where token {@code i} starts in the text. */
    public int start(int i) {
        return starts[i];
    }

    public int end(int i) {
        return ends[i];
    }

    /** Tokens {@code [from, to)}. */
    public TokenSequence slice(int from, int to) {
        return new TokenSequence(text, Arrays.copyOfRange(ids, from, to), Arrays.copyOfRange(tokens, from, to),
                Arrays.copyOfRange(starts, from, to), Arrays.copyOfRange(ends, from, to));
    }

    static Builder builder(TextIndex text) {
        return new Builder(text);
    }

    static final class Builder {
        private final TextIndex text;
        private int[] ids = new int[16];
        private String[] tokens = new String[16];
        private int[] starts = new int[16];
        private int[] ends = new int[16];
        private int size;

        private Builder(TextIndex text) {
            this.text = text;
        }

        void add(int id, String token, int start, int end) {
            if (size == ids.length) {
                int capacity = size * 2;
                ids = Arrays.copyOf(ids, capacity);
                tokens = Arrays.copyOf(tokens, capacity);
                starts = Arrays.copyOf(starts, capacity);
                ends = Arrays.copyOf(ends, capacity);
            }
            ids[size] = id;
            tokens[size] = token;
            starts[size] = start;
            ends[size] = end;
            size++;
        }

        int size() {
            return size;
        }

        /** Drops the tokens added after the first {@code size}. */
        void truncate(int size) {
            this.size = size;
        }

        TokenSequence build() {
            return new TokenSequence(text, Arrays.copyOf(ids, size), Arrays.copyOf(tokens, size),
                    Arrays.copyOf(starts, size), Arrays.copyOf(ends, size));
        }
    }
}
