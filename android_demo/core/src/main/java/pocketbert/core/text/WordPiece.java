package pocketbert.core.text;

import pocketbert.core.BundleException;

/**
 * Greedy longest-match-first WordPiece, as {@code tokenizers}' {@code WordPiece} model: from the start
 * of the word, take the longest vocabulary entry (with the continuation prefix after the first piece),
 * continue after it; a word with an unmatchable rest, or longer than {@code max_input_chars_per_word}
 * code points, is one unknown token spanning the whole word.
 */
final class WordPiece {
    private final Vocabulary vocabulary;
    private final String unkToken;
    private final int unkId;
    private final String prefix;
    private final int maxInputCharsPerWord;

    WordPiece(Vocabulary vocabulary, String unkToken, String prefix, int maxInputCharsPerWord) {
        this.vocabulary = vocabulary;
        this.unkToken = unkToken;
        this.unkId = vocabulary.id(unkToken);
        if (unkId < 0) {
            throw new BundleException("the unknown token " + unkToken + " is not in vocab.txt",
                    "copy the bundle's vocab.txt; this one does not belong to it");
        }
        this.prefix = prefix;
        this.maxInputCharsPerWord = maxInputCharsPerWord;
    }

    /** Appends the tokens of the word {@code text[from, to)} to {@code out}. */
    void tokenize(AlignedText text, int from, int to, TokenSequence.Builder out) {
        int length = to - from;
        if (length > maxInputCharsPerWord) {
            out.add(unkId, unkToken, text.starts[from], text.ends[to - 1]);
            return;
        }
        int mark = out.size();
        // No vocabulary entry is longer than longestToken code points: longer candidates cannot match.
        int longest = vocabulary.longestToken();
        int start = from;
        while (start < to) {
            int end = Math.min(to, start + longest);
            int id = -1;
            String piece = null;
            while (start < end) {
                String candidate = new String(text.codePoints, start, end - start);
                if (start > from) {
                    candidate = prefix + candidate;
                }
                id = vocabulary.id(candidate);
                if (id >= 0) {
                    piece = candidate;
                    break;
                }
                end--;
            }
            if (piece == null) {
                out.truncate(mark);
                out.add(unkId, unkToken, text.starts[from], text.ends[to - 1]);
                return;
            }
            out.add(id, piece, text.starts[start], text.ends[end - 1]);
            start = end;
        }
    }
}
