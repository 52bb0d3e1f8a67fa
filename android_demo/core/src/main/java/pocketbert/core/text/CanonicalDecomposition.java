package pocketbert.core.text;

import java.util.ArrayList;
import java.util.List;

/**
 * NFD with the alignment rules of {@code unicode-normalization-alignments}, the crate behind
 * {@code tokenizers}' {@code NormalizedString::nfd}: each code point becomes its canonical
 * decomposition (the first code point replaces it, the others are inserted after it), then every run
 * of non-starters is stably sorted by combining class, each code point keeping its replace/insert role.
 */
final class CanonicalDecomposition {
    private CanonicalDecomposition() {
    }

    static AlignedText apply(AlignedText text, UnicodeTables tables) {
        List<int[]> pending = new ArrayList<>(text.length + 4); // {code point, class, inserted ? 1 : 0}
        for (int i = 0; i < text.length; i++) {
            int cp = text.codePoints[i];
            int[] parts = tables.decompose(cp);
            if (parts == null) {
                pending.add(new int[] {cp, tables.combiningClass(cp), 0});
            } else {
                for (int j = 0; j < parts.length; j++) {
                    pending.add(new int[] {parts[j], tables.combiningClass(parts[j]), j == 0 ? 0 : 1});
                }
            }
        }
        sortNonStarterRuns(pending);
        AlignedText.Builder out = text.edit();
        for (int[] item : pending) {
            if (item[2] == 0) {
                out.replace(item[0]);
            } else {
                out.insert(item[0]);
            }
        }
        return out.build();
    }

    /** Canonical ordering: each maximal run of class &gt; 0 sorted by class, stably (insertion sort). */
    private static void sortNonStarterRuns(List<int[]> items) {
        int i = 0;
        while (i < items.size()) {
            if (items.get(i)[1] == 0) {
                i++;
                continue;
            }
            int end = i;
            while (end < items.size() && items.get(end)[1] != 0) {
                end++;
            }
            for (int a = i + 1; a < end; a++) {
                int[] item = items.get(a);
                int b = a - 1;
                while (b >= i && items.get(b)[1] > item[1]) {
                    items.set(b + 1, items.get(b));
                    b--;
                }
                items.set(b + 1, item);
            }
            i = end;
        }
    }
}
