package pocketbert.core.text;

import java.util.Arrays;

/** Sorted, disjoint code point ranges {@code [lo, hi]}, each with an int value; looked up by binary search. */
final class CodePointRanges {
    private final int[] lo;
    private final int[] hi;
    private final int[] values;

    CodePointRanges(int[] lo, int[] hi, int[] values) {
        for (int i = 0; i < lo.length; i++) {
            if (lo[i] > hi[i] || (i > 0 && lo[i] <= hi[i - 1])) {
                throw new IllegalArgumentException("ranges must be sorted and disjoint: "
                        + Integer.toHexString(lo[i]) + ".." + Integer.toHexString(hi[i]));
            }
        }
        this.lo = lo;
        this.hi = hi;
        this.values = values;
    }

    /** Index of the range holding {@code cp}, or -1. */
    int indexOf(int cp) {
        int i = Arrays.binarySearch(lo, cp);
        if (i < 0) {
            i = -i - 2; // the last range starting below cp
        }
        return i >= 0 && cp <= hi[i] ? i : -1;
    }

    boolean contains(int cp) {
        return indexOf(cp) >= 0;
    }

    /** The value of the range holding {@code cp}, or {@code absent}. */
    int valueOf(int cp, int absent) {
        int i = indexOf(cp);
        return i < 0 ? absent : values[i];
    }

    int low(int index) {
        return lo[index];
    }

    int value(int index) {
        return values[index];
    }

    int size() {
        return lo.length;
    }
}
