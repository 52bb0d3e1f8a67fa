package pocketbert.core.text;

import java.util.ArrayList;
import java.util.List;

/** The length arithmetic of {@code tokenizers}' truncation, which the Python runtime relies on. */
public final class Truncation {
    private Truncation() {
    }

    /**
     * {@code longest_first} for a pair of {@code n1} and {@code n2} tokens and room for {@code max}:
     * the lengths to keep. If the shorter one fits next to the longer one's share it stays whole;
     * otherwise both get half, the second text the odd token.
     */
    public static int[] longestFirst(int n1, int n2, int max) {
        if (n1 + n2 <= max) {
            return new int[] {n1, n2};
        }
        boolean swap = n1 > n2;
        int shorter = Math.min(n1, n2);
        int longer;
        if (shorter > max) {
            longer = shorter;
        } else {
            longer = Math.max(shorter, max - shorter);
        }
        if (shorter + longer > max) {
            shorter = max / 2;
            longer = shorter + max % 2;
        }
        int keep1 = swap ? longer : shorter;
        int keep2 = swap ? shorter : longer;
        return new int[] {Math.min(keep1, n1), Math.min(keep2, n2)};
    }

    /**
     * First token of each window when {@code numTokens} tokens are cut into windows of {@code content}
     * tokens overlapping by {@code stride}: one window if they fit, else windows every
     * {@code content - stride} tokens until one reaches the end (the runtime's {@code window_starts}).
     */
    public static List<Integer> windowStarts(int numTokens, int content, int stride) {
        if (content <= 0 || stride < 0 || stride >= content) {
            throw new IllegalArgumentException("need 0 <= stride < content, got stride " + stride + ", content "
                    + content);
        }
        List<Integer> starts = new ArrayList<>();
        if (numTokens <= content) {
            starts.add(0);
            return starts;
        }
        int step = content - stride;
        for (int start = 0; start < numTokens; start += step) {
            starts.add(start);
            if (start + content >= numTokens) {
                break;
            }
        }
        return starts;
    }
}
