package pocketbert.core.text;

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
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;

/** Every case of tests/golden/tokenization.jsonl (written from Hugging Face): identical ids, tokens, masks and offsets. */
class GoldenTokenizationTest {
    private static List<Map<String, Object>> records() {
        return TestFiles.jsonLines(TestFiles.golden("tokenization.jsonl"));
    }

    @Test
    void goldenFileHasTheCasesItPromises() {
        List<Map<String, Object>> records = records();
        assertTrue(records.size() >= 40, "expected at least 40 golden tokenization records, got " + records.size());
        assertTrue(records.stream().anyMatch(r -> r.get("text_pair") != null), "no sentence pairs");
        assertTrue(records.stream().anyMatch(r -> r.get("stride") != null), "no windowed (stride) records");
        assertTrue(records.stream().anyMatch(r -> ((String) r.get("text")).codePoints().anyMatch(c -> c > 0xffff)),
                "no text outside the BMP (UTF-16 offsets would not be tested)");
    }

    @TestFactory
    Stream<DynamicTest> everyGoldenRecord() {
        List<DynamicTest> tests = new ArrayList<>();
        List<Map<String, Object>> records = records();
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = records.get(i);
            String name = String.format("tokenization[%d] %s %s%s max %s%s", i, r.get("tokenizer"),
                    JsonValues.shortLabel((String) r.get("text")),
                    r.get("text_pair") == null ? "" : " + " + JsonValues.shortLabel((String) r.get("text_pair")),
                    r.get("max_length"), r.get("stride") == null ? "" : " stride " + r.get("stride"));
            tests.add(DynamicTest.dynamicTest(name, () -> {
                WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer((String) r.get("tokenizer"));
                List<String> diffs = EncodingDiff.of(EncodingDiff.encode(tokenizer, r), JsonValues.list(r.get("windows")));
                assertEquals(Collections.emptyList(), diffs, "text " + JsonValues.escape((String) r.get("text")));
            }));
        }
        return tests.stream();
    }
}
