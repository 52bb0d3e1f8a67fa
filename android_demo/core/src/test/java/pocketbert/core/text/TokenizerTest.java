package pocketbert.core.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import pocketbert.core.BundleException;
import pocketbert.core.InputException;

/** The tokenizer's rules on a small vocabulary, its errors, and the truncation arithmetic. */
class TokenizerTest {
    private static final List<String> VOCAB = Arrays.asList("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff",
            "##able", "aff", "able", "a", "##a", "b", ",", "!", "want", "##ed", "runn", "##ing", "😀", "##😀");

    private static WordPieceTokenizer tokenizer(int maxInputCharsPerWord) {
        TokenizerSettings settings = new TokenizerSettings.Builder().lowercase(true).stripAccents(null)
                .maxInputCharsPerWord(maxInputCharsPerWord)
                .specialToken("unk", new SpecialToken("[UNK]", 1)).specialToken("cls", new SpecialToken("[CLS]", 2))
                .specialToken("sep", new SpecialToken("[SEP]", 3)).specialToken("pad", new SpecialToken("[PAD]", 0))
                .specialToken("mask", new SpecialToken("[MASK]", 4)).build();
        return new WordPieceTokenizer(Vocabulary.of(VOCAB), settings);
    }

    private static final WordPieceTokenizer TOKENIZER = tokenizer(100);

    @Test
    void greedyLongestMatchFirstWithContinuationPieces() {
        Encoding e = TOKENIZER.encode("UnAffable, wanted running!", 64);
        assertEquals(Arrays.asList("[CLS]", "un", "##aff", "##able", ",", "want", "##ed", "runn", "##ing", "!", "[SEP]"),
                e.tokens());
        assertArrayEquals(new int[] {2, 5, 6, 7, 13, 15, 16, 17, 18, 14, 3}, e.ids());
        assertEquals("0..2 2..5 5..9", e.start(1) + ".." + e.end(1) + " " + e.start(2) + ".." + e.end(2) + " "
                + e.start(3) + ".." + e.end(3));
        assertArrayEquals(new int[] {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, e.specialTokensMask());
        assertArrayEquals(new int[11], e.typeIds());
    }

    @Test
    void aWordWithAnUnmatchableRestOrTooLongIsOneUnknownToken() {
        Encoding e = TOKENIZER.encode("unaffablex aaa", 64);
        assertEquals(Arrays.asList("[CLS]", "[UNK]", "a", "##a", "##a", "[SEP]"), e.tokens());
        assertEquals(0, e.start(1));
        assertEquals(10, e.end(1));
        Encoding tooLong = tokenizer(2).encode("aaa aa", 64);
        assertEquals(Arrays.asList("[CLS]", "[UNK]", "a", "##a", "[SEP]"), tooLong.tokens());
        assertEquals("0..3", tooLong.start(1) + ".." + tooLong.end(1));
    }

    @Test
    void offsetsCountCodePointsAndUtf16Units() {
        Encoding e = TOKENIZER.encode("😀😀 a", 64);
        assertEquals(Arrays.asList("[CLS]", "😀", "##😀", "a", "[SEP]"), e.tokens());
        assertEquals("1..2 3..4", e.start(2) + ".." + e.end(2) + " " + e.start(3) + ".." + e.end(3));
        assertEquals("2..4 5..6", e.startUtf16(2) + ".." + e.endUtf16(2) + " " + e.startUtf16(3) + ".." + e.endUtf16(3));
    }

    @Test
    void typedSpecialTokensMatchExactlyBeforeNormalisation() {
        Encoding e = TOKENIZER.encode("a[MASK]b [mask] [SEP]", 64);
        assertEquals(Arrays.asList("[CLS]", "a", "[MASK]", "b", "[UNK]", "[UNK]", "[UNK]", "[SEP]", "[SEP]"), e.tokens());
        assertEquals("1..7", e.start(2) + ".." + e.end(2));
        assertEquals(0, e.specialTokensMask()[2], "a typed special token is a token of the text");
        SpecialTokenMatcher matcher = new SpecialTokenMatcher(Arrays.asList(new SpecialToken("ab", 1),
                new SpecialToken("abc", 2), new SpecialToken("bcd", 3)));
        List<int[]> matches = matcher.find("xabcd abd".codePoints().toArray());
        assertEquals(2, matches.size());
        assertArrayEquals(new int[] {1, 4, 1}, matches.get(0), "leftmost, then longest");
        assertArrayEquals(new int[] {6, 8, 0}, matches.get(1));
    }

    @Test
    void pairsAreTruncatedLongestFirstWithTypeIdsAndOffsetsPerText() {
        Encoding e = TOKENIZER.encodePair("a a a a a a", "b 😀 b", 9);
        assertEquals(Arrays.asList("[CLS]", "a", "a", "a", "[SEP]", "b", "😀", "b", "[SEP]"), e.tokens());
        assertArrayEquals(new int[] {0, 0, 0, 0, 0, 1, 1, 1, 1}, e.typeIds());
        assertEquals("4..5 5..6", e.start(7) + ".." + e.end(7) + " " + e.startUtf16(7) + ".." + e.endUtf16(7));
        assertTrue(e.truncated());
        assertTrue(!TOKENIZER.encodePair("a", "b", 9).truncated());
    }

    @Test
    void longTextsAreCutIntoOverlappingWindows() {
        List<Encoding> windows = TOKENIZER.encodeWindows("a b a b a b a", 5, 1);
        assertEquals(3, windows.size());
        assertEquals(Arrays.asList("[CLS]", "a", "b", "a", "[SEP]"), windows.get(0).tokens());
        assertEquals(Arrays.asList("[CLS]", "a", "b", "a", "[SEP]"), windows.get(1).tokens());
        assertEquals(4, windows.get(1).start(1), "the second window starts at the first one's last token");
        assertEquals(Arrays.asList("[CLS]", "a", "b", "a", "[SEP]"), windows.get(2).tokens());
        assertEquals(Collections.singletonList(0), Truncation.windowStarts(3, 3, 2));
        assertEquals(Arrays.asList(0, 2, 4, 6), Truncation.windowStarts(9, 3, 1));
        assertEquals(Arrays.asList(0, 3), Truncation.windowStarts(4, 3, 0));
    }

    @Test
    void longestFirstIsTokenizersArithmetic() {
        // tokenizers' own test table (utils/truncation.rs): lengths (n1, n2) -> kept, room 7
        int[][] cases = {{0, 0, 0, 0}, {0, 2, 0, 2}, {0, 4, 0, 4}, {0, 8, 0, 7}, {2, 0, 2, 0}, {2, 2, 2, 2},
            {2, 4, 2, 4}, {2, 8, 2, 5}, {4, 0, 4, 0}, {4, 2, 4, 2}, {4, 4, 3, 4}, {4, 8, 3, 4}, {8, 0, 7, 0},
            {8, 2, 5, 2}, {8, 4, 4, 3}, {8, 8, 3, 4}};
        for (int[] c : cases) {
            assertArrayEquals(new int[] {c[2], c[3]}, Truncation.longestFirst(c[0], c[1], 7), Arrays.toString(c));
        }
        assertArrayEquals(new int[] {0, 0}, Truncation.longestFirst(5, 9, 0));
    }

    @Test
    void refusesWhatItCannotTokenize() {
        InputException e = assertThrows(InputException.class, () -> TOKENIZER.encode("ok \ud800 no", 16));
        assertEquals("the text contains a lone surrogate U+D800 at UTF-16 index 3: it is not valid Unicode text",
                e.problem());
        assertThrows(InputException.class, () -> TOKENIZER.encode("\udc00", 16));
        assertThrows(InputException.class, () -> TOKENIZER.encode("\udc00\ud800", 16));
        assertThrows(InputException.class, () -> TOKENIZER.encode(null, 16));
        e = assertThrows(InputException.class, () -> TOKENIZER.encodeWindows("a", 10, 8));
        assertEquals("stride 8 must be ≥ 0 and smaller than the 8 text tokens of a window", e.problem());
        assertThrows(InputException.class, () -> TOKENIZER.encodeWindows("a", 10, -1));
        assertThrows(InputException.class, () -> TOKENIZER.encodePair("a", "b", 2));
        assertThrows(InputException.class, () -> TOKENIZER.encode("a", 1));
        assertEquals(Arrays.asList("[CLS]", "[SEP]"), TOKENIZER.encode("a b", 2).tokens());
    }

    @Test
    void specialTokenIdsMustBeTheVocabularys() {
        TokenizerSettings wrong = new TokenizerSettings.Builder().specialToken("unk", new SpecialToken("[UNK]", 100))
                .specialToken("cls", new SpecialToken("[CLS]", 2)).specialToken("sep", new SpecialToken("[SEP]", 3))
                .build();
        BundleException e = assertThrows(BundleException.class, () -> new WordPieceTokenizer(Vocabulary.of(VOCAB), wrong));
        assertEquals("the manifest gives [UNK] id 100 but vocab.txt has it on line 1", e.problem());
        BundleException missing = assertThrows(BundleException.class, () -> new TokenizerSettings.Builder()
                .specialToken("unk", new SpecialToken("[UNK]", 1)).build());
        assertTrue(missing.problem().contains("no 'cls' special token"), missing.problem());
    }

    @Test
    void encodeIdsWrapsRawIds() {
        Encoding e = TOKENIZER.encodeIds(20, 5);
        assertArrayEquals(new int[] {2, 20, 5, 3}, e.ids());
        assertEquals(Arrays.asList("[CLS]", "##😀", "un", "[SEP]"), e.tokens());
    }

    @Test
    void detokenizesAsTheWordPieceDecoderWithCleanup() {
        WordPieceDecoder d = new WordPieceDecoder("##");
        assertEquals("##uelo Araújo Noguera", d.decode(Arrays.asList("##uelo", "Ara", "##új", "##o", "No", "##guera")));
        assertEquals("hello, world!", d.decode(Arrays.asList("hello", ",", "world", "!")));
        assertEquals("I'm here. do not", d.decode(Arrays.asList("I", "'m", "here", ".", "do", "not")));
        assertEquals("", d.decode(Collections.emptyList()));
    }
}
