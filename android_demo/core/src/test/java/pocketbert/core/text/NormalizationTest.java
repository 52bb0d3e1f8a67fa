package pocketbert.core.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The normaliser's alignment rules and the Unicode tables, on cases whose expected values were
 * printed by the reference ({@code tokenizers} 0.23.3, per-character splits of a NormalizedString).
 */
class NormalizationTest {
    private static final UnicodeTables TABLES = UnicodeTables.get();

    /** "code point@start..end" for each normalised code point. */
    private static String aligned(AlignedText t) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < t.length; i++) {
            out.append(out.length() == 0 ? "" : " ").append(Integer.toHexString(t.codePoints[i])).append('@')
                    .append(t.starts[i]).append("..").append(t.ends[i]);
        }
        return out.toString();
    }

    private static AlignedText original(String text) {
        int[] cps = text.codePoints().toArray();
        return AlignedText.original(cps, 0, cps.length);
    }

    @Test
    void nfdSpansFollowPositionsWhenMarksAreReordered() {
        // reference: a(0,1) U+0316(1,2) U+0301(2,3) b(3,4): the moved mark takes the position's span
        assertEquals("61@0..1 316@1..2 301@2..3 62@3..4",
                aligned(CanonicalDecomposition.apply(original("a\u0301\u0316b"), TABLES)));
        // a decomposition's extra code points share the decomposed character's span
        assertEquals("75@0..1 308@0..1 304@0..1 78@1..2",
                aligned(CanonicalDecomposition.apply(original("\u01d6x"), TABLES)));
        assertEquals("73@0..1 323@1..2 307@2..3",
                aligned(CanonicalDecomposition.apply(original("s\u0307\u0323"), TABLES)));
        // U+0344 decomposes into two marks of class 230, which stay after U+0316 (220)
        assertEquals("78@0..1 308@1..2 301@1..2 79@2..3",
                aligned(CanonicalDecomposition.apply(original("x\u0344y"), TABLES)));
    }

    @Test
    void stripAccentsKeepsTheSpansOfWhatRemains() {
        BertNormalizer strip = new BertNormalizer(false, false, true, false, TABLES);
        assertEquals("61@0..1 8d4@2..3 62@3..4", aligned(strip.normalize(original("a\u08d4\u0316b"))),
                "U+08D4 is a mark the reference's old category table does not know: kept");
        assertEquals("63@0..1 61@1..2 66@2..3 65@3..4", aligned(strip.normalize(original("cafe\u0301"))));
    }

    @Test
    void lowercaseInsertsExtraCodePointsWithTheSameSpan() {
        BertNormalizer lower = new BertNormalizer(false, false, false, true, TABLES);
        assertEquals("69@0..1 307@0..1 73@1..2", aligned(lower.normalize(original("\u0130S"))));
        assertEquals("3c3@0..1 3c3@1..2", aligned(lower.normalize(original("\u03a3\u03a3"))),
                "no final-sigma rule: one code point at a time");
    }

    @Test
    void chineseCharactersGetSpacesAlignedToTheirNeighbours() {
        BertNormalizer chinese = new BertNormalizer(false, true, false, false, TABLES);
        int[] cps = "x東".codePoints().toArray();
        AlignedText piece = AlignedText.original(cps, 1, 2);
        assertEquals("20@1..1 6771@1..2 20@1..2", aligned(chinese.normalize(piece)),
                "a space inserted at the start of a piece takes the piece's start");
        assertEquals("78@0..1 20@0..1 6771@1..2 20@1..2", aligned(chinese.normalize(original("x東"))));
    }

    @Test
    void cleanTextDropsControlsAndMakesWhitespaceASpace() {
        BertNormalizer clean = new BertNormalizer(true, false, false, false, TABLES);
        assertEquals("61@0..1 20@2..3 62@4..5 20@5..6", aligned(clean.normalize(original("a\u0000\u3000\u200bb\t"))));
    }

    @Test
    void tablesHoldTheReferencesMixOfUnicodeVersions() {
        assertTrue(TABLES.removed.contains(0x0) && TABLES.removed.contains(0xFFFD) && TABLES.removed.contains(0x200B)
                && TABLES.removed.contains(0xE000) && TABLES.removed.contains(0xE0041));
        assertFalse(TABLES.removed.contains('\t') || TABLES.removed.contains(0x378), "unassigned code points are kept");
        assertTrue(TABLES.whitespace.contains(0x3000) && TABLES.whitespace.contains(0xA0) && TABLES.whitespace.contains(0x85));
        assertFalse(TABLES.whitespace.contains(0x200B) || TABLES.whitespace.contains(0x180E));
        assertTrue(TABLES.punctuation.contains('$') && TABLES.punctuation.contains('`') && TABLES.punctuation.contains(0xA1));
        assertFalse(TABLES.punctuation.contains(0x2E43), "a Unicode 9 dash the reference's old table does not know");
        assertTrue(TABLES.punctuation.contains(0x166D), "punctuation in the old table, a symbol since Unicode 12");
        assertTrue(TABLES.chinese.contains(0x4E00) && TABLES.chinese.contains(0x20000) && !TABLES.chinese.contains(0x3042));
        assertFalse(TABLES.chinese.contains(0x2B820), "a gap in tokenizers' CJK ranges");
        assertEquals(230, TABLES.combiningClass(0x301));
        assertEquals(0, TABLES.combiningClass('a'));
        assertArrayEquals(new int[] {0x41, 0x300}, TABLES.decompose(0xC0));
        assertArrayEquals(new int[] {0x1100, 0x1161, 0x11A8}, TABLES.decompose(0xAC01));
        assertNull(TABLES.decompose(0x11938), "decomposes in Unicode 13, not in the reference");
        assertArrayEquals(new int[] {0x69, 0x307}, TABLES.lowercase(0x130));
        assertArrayEquals(new int[] {0x1C8A}, TABLES.lowercase(0x1C89), "a Unicode 16 case pair (Rust's std)");
        assertArrayEquals(new int[] {0x101}, TABLES.lowercase(0x100));
        assertArrayEquals(new int[] {0x101}, TABLES.lowercase(0x101));
    }
}
