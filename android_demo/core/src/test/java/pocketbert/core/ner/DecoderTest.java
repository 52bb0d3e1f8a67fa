package pocketbert.core.ner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import pocketbert.core.InputException;
import pocketbert.core.text.TextIndex;
import pocketbert.core.text.WordPieceDecoder;

/** Decoding rules on hand-made windows: tags, ignore labels, subwords, [UNK], UTF-16 spans, window merge. */
class DecoderTest {
    private static final List<String> LABELS = Arrays.asList("O", "B-PER", "I-PER", "B-LOC", "I-LOC");
    private static final int UNK = 100;

    /** Logits that make {@code label % 10} win, by a margin of 6 (or {@code label / 10} if given: 16 → PER by 1). */
    private static float[] sure(int label) {
        float[] row = new float[LABELS.size()];
        row[label % 10] = label >= 10 ? label / 10 : 6f;
        return row;
    }

    private static List<Entity> decode(String text, String[] tokens, int[][] spans, int[] labels, Aggregation aggregation,
                                       String... ignore) {
        int n = tokens.length + 2;
        int[] ids = new int[n];
        List<String> all = new ArrayList<>();
        int[] starts = new int[n];
        int[] ends = new int[n];
        int[] special = new int[n];
        float[][] logits = new float[n][];
        all.add("[CLS]");
        special[0] = 1;
        logits[0] = sure(3);
        for (int i = 0; i < tokens.length; i++) {
            ids[i + 1] = tokens[i].equals("[UNK]") ? UNK : 1000 + i;
            all.add(tokens[i]);
            starts[i + 1] = spans[i][0];
            ends[i + 1] = spans[i][1];
            logits[i + 1] = sure(labels[i]);
        }
        all.add("[SEP]");
        special[n - 1] = 1;
        logits[n - 1] = sure(3);
        TokenClassificationDecoder decoder = new TokenClassificationDecoder(LABELS, UNK, true, new WordPieceDecoder("##"),
                new HashSet<>(Arrays.asList(ignore)));
        return decoder.decode(TextIndex.of(text), new TokenWindow(ids, all, starts, ends, special), logits, aggregation, 0);
    }

    @Test
    void bioAndIob1GroupAlikeAndBStartsANewEntity() {
        String text = "Ann Lee Bob in Rome";
        String[] tokens = {"ann", "lee", "bob", "in", "rome"};
        int[][] spans = {{0, 3}, {4, 7}, {8, 11}, {12, 14}, {15, 19}};
        List<Entity> iob2 = decode(text, tokens, spans, new int[] {1, 2, 1, 0, 3}, Aggregation.SIMPLE, "O");
        List<Entity> iob1 = decode(text, tokens, spans, new int[] {2, 2, 1, 0, 4}, Aggregation.SIMPLE, "O");
        for (List<Entity> groups : Arrays.asList(iob2, iob1)) {
            assertEquals("[PER ann lee 0..7, PER bob 8..11, LOC rome 15..19]", describe(groups));
        }
        assertTrue(iob2.get(0).grouped() && iob2.get(0).index() == -1);
    }

    @Test
    void ignoredLabelsAreDroppedAndCanBeChosen() {
        String text = "Ann in Rome";
        String[] tokens = {"ann", "in", "rome"};
        int[][] spans = {{0, 3}, {4, 6}, {7, 11}};
        int[] labels = {1, 0, 3};
        assertEquals("[PER ann 0..3, LOC rome 7..11]", describe(decode(text, tokens, spans, labels, Aggregation.SIMPLE, "O")));
        assertEquals("[PER ann 0..3, O in 4..6, LOC rome 7..11]", describe(decode(text, tokens, spans, labels,
                Aggregation.SIMPLE)));
        List<Entity> none = decode(text, tokens, spans, labels, Aggregation.NONE, "O", "B-LOC");
        assertEquals("[B-PER ann 0..3]", describe(none));
        assertEquals(1, none.get(0).index());
    }

    @Test
    void subwordsJoinTheirWordAndUnknownTokensShowTheText() {
        String text = "Zürich ☃x";
        String[] tokens = {"zu", "##rich", "[UNK]"};
        int[][] spans = {{0, 2}, {2, 6}, {7, 9}};
        List<Entity> first = decode(text, tokens, spans, new int[] {3, 1, 3}, Aggregation.FIRST, "O");
        assertEquals("[LOC zurich 0..6, LOC ☃x 7..9]", describe(first),
                "the word takes its first token's label; [UNK] starts a word of its own");
        List<Entity> max = decode(text, tokens, spans, new int[] {3, 11, 3}, Aggregation.MAX, "O");
        assertEquals("LOC", max.get(0).label(), "the most confident token of the word decides");
        max = decode(text, tokens, spans, new int[] {13, 1, 3}, Aggregation.MAX, "O");
        assertEquals("PER", max.get(0).label(), "the most confident token of the word decides");
        List<Entity> average = decode(text, tokens, spans, new int[] {13, 1, 3}, Aggregation.AVERAGE, "O");
        assertEquals("PER", average.get(0).label(), "the mean of the word's probabilities decides");
        List<Entity> simple = decode(text, tokens, spans, new int[] {3, 1, 3}, Aggregation.SIMPLE, "O");
        assertEquals("[LOC zu 0..2, PER ##rich 2..6, LOC ☃x 7..9]", describe(simple));
        List<Entity> joined = decode(text, tokens, spans, new int[] {3, 1, 4}, Aggregation.FIRST, "O");
        assertEquals("[LOC zurich ☃x 0..9]", describe(joined), "I-LOC continues the adjacent LOC word");
    }

    @Test
    void spansAreGivenInCodePointsAndUtf16Units() {
        String text = "😀 Rome";
        List<Entity> got = decode(text, new String[] {"[UNK]", "rome"}, new int[][] {{0, 1}, {2, 6}}, new int[] {0, 3},
                Aggregation.SIMPLE, "O");
        Entity rome = got.get(0);
        assertEquals("2..6 3..7", rome.start() + ".." + rome.end() + " " + rome.startUtf16() + ".." + rome.endUtf16());
        assertEquals("Rome", text.substring(rome.startUtf16(), rome.endUtf16()));
    }

    @Test
    void eachTokenComesFromTheWindowWhereItIsFarthestFromACut() {
        // windows of 6, 6 and 4 text tokens, 4 apart: each overlap of 2 is split in its middle
        int[][] sources = WindowSeams.tokenSources(new int[] {6, 6, 4}, 4);
        StringBuilder got = new StringBuilder();
        for (int[] source : sources) {
            got.append(source[0]).append(':').append(source[1]).append(' ');
        }
        assertEquals("0:0 0:1 0:2 0:3 0:4 1:1 1:2 1:3 1:4 2:1 2:2 2:3 ", got.toString());
        assertThrows(IllegalArgumentException.class, () -> WindowSeams.tokenSources(new int[] {3, 3}, 4));
    }

    @Test
    void aggregationNamesAreThePythonRuntimes() {
        assertEquals(Aggregation.AVERAGE, Aggregation.of("average"));
        assertEquals("max", Aggregation.MAX.key());
        InputException e = assertThrows(InputException.class, () -> Aggregation.of("mean"));
        assertEquals("unknown aggregation 'mean'", e.problem());
    }

    private static List<String> words(List<Entity> entities) {
        List<String> out = new ArrayList<>();
        for (Entity e : entities) {
            out.add(e.word());
        }
        return out;
    }

    private static String describe(List<Entity> entities) {
        List<String> out = new ArrayList<>();
        for (Entity e : entities) {
            out.add(e.label() + " " + e.word() + " " + e.start() + ".." + e.end());
        }
        return out.toString();
    }
}
