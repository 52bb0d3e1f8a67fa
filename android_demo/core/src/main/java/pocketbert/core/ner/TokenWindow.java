package pocketbert.core.ner;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import pocketbert.core.text.Encoding;

/** What decoding needs of one model input row: ids, vocabulary strings, code point spans, special flags. */
public final class TokenWindow {
    private final int[] ids;
    private final List<String> tokens;
    private final int[] starts;
    private final int[] ends;
    private final int[] special;

    public TokenWindow(int[] ids, List<String> tokens, int[] starts, int[] ends, int[] special) {
        int n = ids.length;
        if (tokens.size() != n || starts.length != n || ends.length != n || special.length != n) {
            throw new IllegalArgumentException("a window's ids, tokens, offsets and special mask differ in length");
        }
        this.ids = ids.clone();
        this.tokens = Collections.unmodifiableList(new ArrayList<>(tokens));
        this.starts = starts.clone();
        this.ends = ends.clone();
        this.special = special.clone();
    }

    public static TokenWindow of(Encoding row) {
        int n = row.length();
        int[] starts = new int[n];
        int[] ends = new int[n];
        for (int i = 0; i < n; i++) {
            starts[i] = row.start(i);
            ends[i] = row.end(i);
        }
        return new TokenWindow(row.ids(), row.tokens(), starts, ends, row.specialTokensMask());
    }

    public int size() {
        return ids.length;
    }

    int id(int i) {
        return ids[i];
    }

    String token(int i) {
        return tokens.get(i);
    }

    int start(int i) {
        return starts[i];
    }

    int end(int i) {
        return ends[i];
    }

    boolean isSpecial(int i) {
        return special[i] != 0;
    }
}
