package pocketbert.core.ner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import pocketbert.core.Entities;
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;
import pocketbert.core.text.Encoding;
import pocketbert.core.text.TextIndex;
import pocketbert.core.text.WordPieceDecoder;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * Every case of tests/golden/ner.jsonl: from the golden windows and logits, Java decodes exactly the
 * entities Hugging Face's token-classification pipeline returned, for every aggregation (IOB2, IOB1
 * and unprefixed labels, long texts in windows); and Java's own windows of the text are the golden ones.
 */
class GoldenNerTest {
    private static List<Map<String, Object>> records() {
        return TestFiles.jsonLines(TestFiles.golden("ner.jsonl"));
    }

    @Test
    void goldenFileHoldsEveryAggregationAndScheme() {
        List<Map<String, Object>> records = records();
        assertTrue(records.size() >= 40, "expected at least 40 NER records, got " + records.size());
        for (String scheme : new String[] {"bio", "iob1", "plain"}) {
            assertTrue(records.stream().anyMatch(r -> r.get("scheme").equals(scheme)), "no " + scheme + " records");
        }
        for (Aggregation a : Aggregation.values()) {
            assertTrue(records.stream().anyMatch(r -> JsonValues.object(r.get("expected")).containsKey(a.key())),
                    "no expectations for aggregation " + a.key());
        }
        assertTrue(records.stream().anyMatch(r -> JsonValues.list(r.get("windows")).size() > 1), "no multi-window record");
    }

    @TestFactory
    Stream<DynamicTest> everyRecordAndAggregation() {
        List<DynamicTest> tests = new ArrayList<>();
        List<Map<String, Object>> records = records();
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = records.get(i);
            String name = String.format("ner[%d] %s %s %s", i, r.get("scheme"), r.get("tokenizer"),
                    JsonValues.shortLabel((String) r.get("text")));
            tests.add(DynamicTest.dynamicTest(name + " windows", () -> assertJavaWindowsAreGolden(r)));
            for (Map.Entry<String, Object> expected : JsonValues.object(r.get("expected")).entrySet()) {
                tests.add(DynamicTest.dynamicTest(name + " " + expected.getKey(), () -> {
                    List<Entity> got = decode(r, Aggregation.of(expected.getKey()));
                    assertEquals(Collections.emptyList(), Entities.diff(got, JsonValues.list(expected.getValue())));
                }));
            }
        }
        return tests.stream();
    }

    static List<Entity> decode(Map<String, Object> r, Aggregation aggregation) {
        String tokenizerName = (String) r.get("tokenizer");
        WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer(tokenizerName);
        List<TokenWindow> windows = new ArrayList<>();
        List<float[][]> logits = new ArrayList<>();
        for (Object w : JsonValues.list(r.get("windows"))) {
            Map<String, Object> window = JsonValues.object(w);
            int[][] spans = JsonValues.spans(window.get("offsets"));
            windows.add(new TokenWindow(JsonValues.ints(window.get("input_ids")), JsonValues.strings(window.get("tokens")),
                    spans[0], spans[1], JsonValues.ints(window.get("special_tokens_mask"))));
            logits.add(JsonValues.matrix(window.get("logits")));
        }
        TokenClassificationDecoder decoder = new TokenClassificationDecoder(JsonValues.strings(r.get("labels")),
                tokenizer.unk().id(), tokenizer.wordAware(), new WordPieceDecoder("##"), Collections.singleton("O"));
        int stride = r.get("stride") == null ? 0 : ((Number) r.get("stride")).intValue();
        int step = ((Number) r.get("max_length")).intValue() - 2 - stride;
        return decoder.decodeText(TextIndex.of((String) r.get("text")), windows, logits, aggregation, step);
    }

    private static void assertJavaWindowsAreGolden(Map<String, Object> r) {
        WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer((String) r.get("tokenizer"));
        String text = (String) r.get("text");
        int maxLength = ((Number) r.get("max_length")).intValue();
        List<Encoding> got = r.get("stride") == null ? Collections.singletonList(tokenizer.encode(text, maxLength))
                : tokenizer.encodeWindows(text, maxLength, ((Number) r.get("stride")).intValue());
        List<Object> want = JsonValues.list(r.get("windows"));
        assertEquals(want.size(), got.size(), "windows");
        for (int k = 0; k < got.size(); k++) {
            Map<String, Object> w = JsonValues.object(want.get(k));
            Encoding e = got.get(k);
            assertEquals(JsonValues.strings(w.get("tokens")), e.tokens(), "tokens of window " + k);
            assertEquals(java.util.Arrays.toString(JsonValues.ints(w.get("input_ids"))), java.util.Arrays.toString(e.ids()));
            int[][] spans = JsonValues.spans(w.get("offsets"));
            for (int t = 0; t < e.length(); t++) {
                assertEquals(spans[0][t] + ".." + spans[1][t], e.start(t) + ".." + e.end(t), "offsets of token " + t);
            }
            assertEquals(java.util.Arrays.toString(JsonValues.ints(w.get("special_tokens_mask"))),
                    java.util.Arrays.toString(e.specialTokensMask()));
        }
    }
}
