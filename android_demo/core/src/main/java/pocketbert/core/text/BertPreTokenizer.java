package pocketbert.core.text;

import java.util.ArrayList;
import java.util.List;

/**
 * BERT's pre-tokeniser on normalised text, as {@code tokenizers}' {@code BertPreTokenizer}: whitespace
 * (Unicode White_Space) separates words and is dropped; each punctuation character (ASCII punctuation
 * or a Unicode punctuation category, in the reference's tables) is a word of its own.
 */
final class BertPreTokenizer {
    private final UnicodeTables tables;

    BertPreTokenizer(UnicodeTables tables) {
        this.tables = tables;
    }

    /** Words as {@code {from, to}} index ranges into {@code text}. */
    List<int[]> words(AlignedText text) {
        List<int[]> words = new ArrayList<>();
        int start = -1;
        for (int i = 0; i < text.length; i++) {
            int cp = text.codePoints[i];
            boolean space = tables.whitespace.contains(cp);
            boolean punctuation = !space && tables.punctuation.contains(cp);
            if (space || punctuation) {
                if (start >= 0) {
                    words.add(new int[] {start, i});
                    start = -1;
                }
                if (punctuation) {
                    words.add(new int[] {i, i + 1});
                }
            } else if (start < 0) {
                start = i;
            }
        }
        if (start >= 0) {
            words.add(new int[] {start, text.length});
        }
        return words;
    }
}
