package pocketbert.core.text;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * One model input row: {@code [CLS] a [SEP]} or {@code [CLS] a [SEP] b [SEP]}, with what the golden
 * vectors record of it. Offsets are {@code [start, end)} into the text the token came from (for pairs,
 * {@code b}'s tokens count in {@code b}), in code points and in UTF-16 units; {@code [0, 0]} for the
 * added {@code [CLS]}/{@code [SEP]}. No padding: the attention mask is all ones.
 */
public final class Encoding {
    private final int[] ids;
    private final String[] tokens;
    private final int[] typeIds;
    private final int[] specialTokensMask;
    private final int[] starts;
    private final int[] ends;
    private final int[] startsUtf16;
    private final int[] endsUtf16;
    private final boolean truncated;

    private Encoding(Builder b, boolean truncated) {
        this.ids = Arrays.copyOf(b.ids, b.size);
        this.tokens = Arrays.copyOf(b.tokens, b.size);
        this.typeIds = Arrays.copyOf(b.typeIds, b.size);
        this.specialTokensMask = Arrays.copyOf(b.special, b.size);
        this.starts = Arrays.copyOf(b.starts, b.size);
        this.ends = Arrays.copyOf(b.ends, b.size);
        this.startsUtf16 = Arrays.copyOf(b.startsUtf16, b.size);
        this.endsUtf16 = Arrays.copyOf(b.endsUtf16, b.size);
        this.truncated = truncated;
    }

    public int length() {
        return ids.length;
    }

    public int[] ids() {
        return ids.clone();
    }

    public int id(int i) {
        return ids[i];
    }

    public List<String> tokens() {
        return Collections.unmodifiableList(new ArrayList<>(Arrays.asList(tokens)));
    }

    public String token(int i) {
        return tokens[i];
    }

    public int[] typeIds() {
        return typeIds.clone();
    }

    /** All ones (rows are never padded here; {@link pocketbert.core.model} pads for the model). */
    public int[] attentionMask() {
        int[] mask = new int[ids.length];
        Arrays.fill(mask, 1);
        return mask;
    }

    /**
     * 1 for the added {@code [CLS]} and {@code [SEP]}; 0 for every token of the text, special tokens typed
     * in it included (as Hugging Face's encodings: such a token is decoded as a word of the text).
     */
    public int[] specialTokensMask() {
        return specialTokensMask.clone();
    }

    public boolean isSpecial(int i) {
        return specialTokensMask[i] == 1;
    }

    /** Code point offset where token {@code i} starts. */
    public int start(int i) {
        return starts[i];
    }

    public int end(int i) {
        return ends[i];
    }

    public int startUtf16(int i) {
        return startsUtf16[i];
    }

    public int endUtf16(int i) {
        return endsUtf16[i];
    }

    /** True if tokens were cut to fit the maximum length (the Python runtime warns then). */
    public boolean truncated() {
        return truncated;
    }

    static Builder builder(int capacity) {
        return new Builder(capacity);
    }

    static final class Builder {
        private final int[] ids;
        private final String[] tokens;
        private final int[] typeIds;
        private final int[] special;
        private final int[] starts;
        private final int[] ends;
        private final int[] startsUtf16;
        private final int[] endsUtf16;
        private int size;

        private Builder(int capacity) {
            ids = new int[capacity];
            tokens = new String[capacity];
            typeIds = new int[capacity];
            special = new int[capacity];
            starts = new int[capacity];
            ends = new int[capacity];
            startsUtf16 = new int[capacity];
            endsUtf16 = new int[capacity];
        }

        /** An added special token ({@code [CLS]}, {@code [SEP]}): offsets {@code [0, 0]}. */
        Builder addSpecial(SpecialToken token, int typeId) {
            set(token.id(), token.token(), typeId, 1, 0, 0, 0, 0);
            return this;
        }

        /** A token given by id, without a text span. */
        Builder addToken(int id, String token, int typeId) {
            set(id, token, typeId, 0, 0, 0, 0, 0);
            return this;
        }

        /** All tokens of {@code sequence} with type id {@code typeId}. */
        Builder addAll(TokenSequence sequence, int typeId) {
            TextIndex text = sequence.text();
            for (int i = 0; i < sequence.size(); i++) {
                int start = sequence.start(i);
                int end = sequence.end(i);
                set(sequence.id(i), sequence.token(i), typeId, 0, start, end,
                        text.utf16(start), text.utf16(end));
            }
            return this;
        }

        Encoding build(boolean truncated) {
            return new Encoding(this, truncated);
        }

        private void set(int id, String token, int typeId, int isSpecial, int start, int end, int start16, int end16) {
            ids[size] = id;
            tokens[size] = token;
            typeIds[size] = typeId;
            special[size] = isSpecial;
            starts[size] = start;
            ends[size] = end;
            startsUtf16[size] = start16;
            endsUtf16[size] = end16;
            size++;
        }
    }
}
