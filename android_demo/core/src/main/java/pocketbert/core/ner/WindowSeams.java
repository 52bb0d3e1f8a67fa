package pocketbert.core.ner;

/**
 * Which window each token of a long text takes its scores from (the runtime's
 * {@code windows.token_sources}): the window in which the token lies farthest from an inner edge (a
 * window's start or end that is not the text's), the earlier window on a tie. The stitched sequence is
 * then decoded once, so an entity crossing the place where two windows meet is decoded whole (Hugging
 * Face's {@code stride} merge decodes windows apart and keeps the longer of overlapping entities, which
 * splits a name that one window sees cut).
 */
public final class WindowSeams {
    private WindowSeams() {
    }

    /**
     * @param lengths text tokens (specials excluded) of each window; window {@code k} starts {@code k * step}
     *     tokens into the text
     * @return for each token of the whole text, {@code {window, position among that window's text tokens}}
     */
    public static int[][] tokenSources(int[] lengths, int step) {
        int last = lengths.length - 1;
        int total = 0;
        for (int k = 0; k < lengths.length; k++) {
            total = Math.max(total, k * step + lengths[k]);
        }
        int[][] sources = new int[total][];
        long[] best = new long[total];
        java.util.Arrays.fill(best, -1);
        for (int k = 0; k < lengths.length; k++) {
            for (int j = 0; j < lengths[k]; j++) {
                long margin = Math.min(k > 0 ? j : Long.MAX_VALUE, k < last ? lengths[k] - 1 - j : Long.MAX_VALUE);
                int g = k * step + j;
                if (margin > best[g]) {
                    best[g] = margin;
                    sources[g] = new int[] {k, j};
                }
            }
        }
        for (int[] source : sources) {
            if (source == null) {
                throw new IllegalArgumentException("windows " + step + " tokens apart leave tokens uncovered");
            }
        }
        return sources;
    }
}
