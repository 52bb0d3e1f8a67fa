package pocketbert.core.text;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;

/**
 * Thousands of random texts (tools/make_fuzz_cases.py: mixed scripts, decomposed accents, combining
 * marks, every whitespace kind, control and format characters, emoji sequences, typed special tokens,
 * uniformly random code points) tokenized by the Python runtime and by Java: zero differences, per
 * tokenizer and mode (single texts, pairs, windows).
 */
class FuzzTest {
    private static final int MIN_CASES = 1000;

    @TestFactory
    Stream<DynamicTest> javaTokenizesEveryFuzzTextLikePython() {
        List<Map<String, Object>> cases = TestFiles.jsonLines(TestFiles.path("fuzz"));
        Map<String, List<Map<String, Object>>> groups = new LinkedHashMap<>();
        for (Map<String, Object> c : cases) {
            groups.computeIfAbsent(c.get("tokenizer") + " " + c.get("mode"), k -> new ArrayList<>()).add(c);
        }
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest("fuzz file holds at least " + MIN_CASES + " cases in 6 groups", () -> {
            assertTrue(cases.size() >= MIN_CASES, "only " + cases.size() + " fuzz cases");
            assertTrue(groups.size() == 6, "expected 2 tokenizers x 3 modes, got " + groups.keySet());
        }));
        for (Map.Entry<String, List<Map<String, Object>>> group : groups.entrySet()) {
            List<Map<String, Object>> items = group.getValue();
            tests.add(DynamicTest.dynamicTest("fuzz " + group.getKey() + ": " + items.size() + " texts", () -> {
                int differing = 0;
                StringBuilder report = new StringBuilder();
                for (Map<String, Object> c : items) {
                    WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer((String) c.get("tokenizer"));
                    List<String> diffs;
                    try {
                        diffs = EncodingDiff.of(EncodingDiff.encode(tokenizer, c), JsonValues.list(c.get("windows")));
                    } catch (RuntimeException e) {
                        diffs = java.util.Collections.singletonList("threw " + e);
                    }
                    if (!diffs.isEmpty()) {
                        if (++differing <= 5) {
                            report.append("\n  text ").append(JsonValues.escape((String) c.get("text")));
                            if (c.get("text_pair") != null) {
                                report.append(" + ").append(JsonValues.escape((String) c.get("text_pair")));
                            }
                            report.append(" max ").append(c.get("max_length")).append(" stride ").append(c.get("stride"));
                            for (String d : diffs.subList(0, Math.min(4, diffs.size()))) {
                                report.append("\n    ").append(d);
                            }
                        }
                    }
                }
                if (differing > 0) {
                    fail(differing + " of " + items.size() + " texts tokenize differently in Java and Python:" + report);
                }
                System.out.println("fuzz " + group.getKey() + ": " + items.size() + " texts, 0 differences");
            }));
        }
        return tests.stream();
    }
}
