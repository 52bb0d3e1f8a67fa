package pocketbert.core.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import pocketbert.core.Entities;
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;
import pocketbert.core.ner.Aggregation;
import pocketbert.core.ner.Entity;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * The NER pipeline end to end on the golden records: it tokenizes the text itself (windows and
 * stride for long texts), pads each row into a bucket, feeds the inputs by name, and decodes the
 * logits a stand-in model returns (the golden ones for that window): the result must be Hugging
 * Face's, for every aggregation.
 */
class GoldenPipelineTest {
    private static final List<String> INPUTS = Arrays.asList("input_ids", "attention_mask", "token_type_ids");

    @TestFactory
    Stream<DynamicTest> pipelineReproducesEveryGoldenNerRecord() {
        List<Map<String, Object>> records = TestFiles.jsonLines(TestFiles.golden("ner.jsonl"));
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < records.size(); i++) {
            Map<String, Object> r = records.get(i);
            for (Map.Entry<String, Object> expected : JsonValues.object(r.get("expected")).entrySet()) {
                String name = String.format("pipeline ner[%d] %s %s %s", i, r.get("scheme"),
                        JsonValues.shortLabel((String) r.get("text")), expected.getKey());
                tests.add(DynamicTest.dynamicTest(name, () -> {
                    List<Entity> got = run(r, Aggregation.of(expected.getKey()));
                    assertEquals(Collections.emptyList(), Entities.diff(got, JsonValues.list(expected.getValue())));
                }));
            }
        }
        return tests.stream();
    }

    private static List<Entity> run(Map<String, Object> r, Aggregation aggregation) {
        List<String> labels = JsonValues.strings(r.get("labels"));
        int maxLength = ((Number) r.get("max_length")).intValue();
        GoldenLogitsRunner runner = new GoldenLogitsRunner(maxLength, labels.size(), INPUTS);
        for (Object w : JsonValues.list(r.get("windows"))) {
            Map<String, Object> window = JsonValues.object(w);
            runner.answer(JsonValues.ints(window.get("input_ids")), JsonValues.matrix(window.get("logits")));
        }
        WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer((String) r.get("tokenizer"));
        TokenClassificationPipeline pipeline = new TokenClassificationPipeline(tokenizer,
                BucketedModel.open(runner, INPUTS, labels.size(), true), labels, maxLength);
        int stride = r.get("stride") == null ? pipeline.defaultStride() : ((Number) r.get("stride")).intValue();
        return pipeline.run((String) r.get("text"), aggregation, stride, Collections.singleton("O"));
    }
}
