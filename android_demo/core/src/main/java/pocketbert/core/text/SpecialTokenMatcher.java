package pocketbert.core.text;

import java.util.ArrayList;
import java.util.List;

/**
 * Finds special tokens typed in a text ({@code "[CLS] a [SEP]"}), before any normalisation, as
 * {@code tokenizers}' added vocabulary does for special tokens: exact, case-sensitive matches,
 * leftmost first and the longest at a position, never overlapping.
 */
final class SpecialTokenMatcher {
    private final int[][] patterns; // code points of each token
    private final int[] ids;
    private final String[] tokens;

    SpecialTokenMatcher(List<SpecialToken> specials) {
        List<SpecialToken> unique = new ArrayList<>();
        for (SpecialToken s : specials) {
            if (unique.stream().noneMatch(u -> u.token().equals(s.token()))) {
                unique.add(s);
            }
        }
        patterns = new int[unique.size()][];
        ids = new int[unique.size()];
        tokens = new String[unique.size()];
        for (int i = 0; i < unique.size(); i++) {
            patterns[i] = unique.get(i).token().codePoints().toArray();
            ids[i] = unique.get(i).id();
            tokens[i] = unique.get(i).token();
        }
    }

    /** Matches as {@code {start, end, pattern index}} in code points, left to right. */
    List<int[]> find(int[] text) {
        List<int[]> matches = new ArrayList<>();
        int i = 0;
        while (i < text.length) {
            int best = -1;
            for (int p = 0; p < patterns.length; p++) {
                if ((best < 0 || patterns[p].length > patterns[best].length) && matchesAt(text, i, patterns[p])) {
                    best = p;
                }
            }
            if (best < 0) {
                i++;
            } else {
                matches.add(new int[] {i, i + patterns[best].length, best});
                i += patterns[best].length;
            }
        }
        return matches;
    }

    int id(int pattern) {
        return ids[pattern];
    }

    String token(int pattern) {
        return tokens[pattern];
    }

    private static boolean matchesAt(int[] text, int at, int[] pattern) {
        if (at + pattern.length > text.length) {
            return false;
        }
        for (int j = 0; j < pattern.length; j++) {
            if (text[at + j] != pattern[j]) {
                return false;
            }
        }
        return true;
    }
}
