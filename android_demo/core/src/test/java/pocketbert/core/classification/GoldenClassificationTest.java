package pocketbert.core.classification;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import pocketbert.core.Entities;
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;

/**
 * Every case of tests/golden/classification.jsonl: the score function chosen from the problem type,
 * the best label, the top 2 and all labels ranked (ties in label order), scores within 1e-6.
 */
class GoldenClassificationTest {
    @TestFactory
    Stream<DynamicTest> everyGoldenRecord() {
        List<Map<String, Object>> records = TestFiles.jsonLines(TestFiles.golden("classification.jsonl"));
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest("golden file covers every problem type", () -> {
            assertTrue(records.size() >= 20, "expected at least 20 records, got " + records.size());
            for (String type : new String[] {"single_label_classification", "multi_label_classification", "regression"}) {
                assertTrue(records.stream().anyMatch(r -> type.equals(r.get("problem_type"))), "no " + type);
            }
            assertTrue(records.stream().anyMatch(r -> r.get("problem_type") == null), "no record without problem type");
        }));
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = records.get(i);
            tests.add(DynamicTest.dynamicTest("classification[" + i + "] " + r.get("problem_type") + " "
                    + JsonValues.strings(r.get("labels")), () -> check(r)));
        }
        return tests.stream();
    }

    private static void check(Map<String, Object> r) {
        List<String> labels = JsonValues.strings(r.get("labels"));
        float[] scores = ScoreFunction.forProblemType((String) r.get("problem_type"), labels.size())
                .apply(JsonValues.floats(r.get("logits")));
        Map<String, Object> expected = JsonValues.object(r.get("expected"));
        Map<String, Object> best = JsonValues.object(expected.get("top_k_unset"));
        LabelScore got = Ranking.best(scores, labels);
        assertEquals(best.get("label"), got.label());
        assertEquals(((Number) best.get("score")).doubleValue(), got.score(), Entities.SCORE_TOLERANCE);
        assertRanked(JsonValues.list(expected.get("top_k_2")), Ranking.top(scores, labels, 2));
        assertRanked(JsonValues.list(expected.get("top_k_all")), Ranking.top(scores, labels, null));
    }

    private static void assertRanked(List<Object> expected, List<LabelScore> got) {
        assertEquals(expected.size(), got.size());
        for (int i = 0; i < got.size(); i++) {
            Map<String, Object> w = JsonValues.object(expected.get(i));
            assertEquals(w.get("label"), got.get(i).label(), "label at rank " + i);
            assertEquals(((Number) w.get("score")).doubleValue(), got.get(i).score(), Entities.SCORE_TOLERANCE,
                    "score at rank " + i);
        }
    }
}
