package pocketbert.core.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import pocketbert.core.Entities;
import pocketbert.core.JsonValues;
import pocketbert.core.TestFiles;
import pocketbert.core.bundle.Artifact;
import pocketbert.core.bundle.Integrity;
import pocketbert.core.bundle.Labels;
import pocketbert.core.bundle.Manifest;
import pocketbert.core.classification.LabelScore;
import pocketbert.core.json.Json;
import pocketbert.core.ner.Aggregation;
import pocketbert.core.ner.Entity;
import pocketbert.core.text.TokenizerSettings;
import pocketbert.core.text.Vocabulary;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * Three real bundles written by the converter (a BERT NER model whose int8-static TFLite model returns
 * int8 logits, a DistilBERT classifier without token_type_ids, and the phone cut of the shipped sst2-phone with
 * its int4 file), loaded the way the app loads them
 * (manifest, integrity, labels, vocab.txt, artifact choice, load-time probe), then run on the texts
 * the Python runtime ran, with the model's recorded LiteRT outputs: Java must choose the same
 * artifact, make exactly the same model calls, and return the runtime's entities and labels.
 */
class ReplayPipelineTest {
    @TestFactory
    Stream<DynamicTest> nerBundle() {
        Map<String, Object> section = section("ner");
        Loaded loaded = load(section);
        TokenClassificationPipeline pipeline = Pipelines.ner(loaded.manifest, loaded.artifact, loaded.tokenizer,
                loaded.runner);
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest("NER bundle: same artifact, maximum and stride as the Python runtime", () -> {
            assertEquals(section.get("recipe"), loaded.artifact.recipe());
            assertEquals(((Number) section.get("max_length")).intValue(), pipeline.maxLength());
            assertEquals(((Number) section.get("default_stride")).intValue(), pipeline.defaultStride());
        }));
        for (Object c : JsonValues.list(section.get("cases"))) {
            Map<String, Object> item = JsonValues.object(c);
            String text = (String) item.get("text");
            Object stride = item.get("stride");
            String name = "NER bundle " + JsonValues.shortLabel(text) + " " + item.get("aggregation")
                    + (stride == null ? "" : " stride " + stride);
            tests.add(DynamicTest.dynamicTest(name, () -> {
                List<Entity> got = pipeline.run(text, Aggregation.of((String) item.get("aggregation")),
                        stride == null ? pipeline.defaultStride() : ((Number) stride).intValue(), Collections.singleton("O"));
                assertEquals(Collections.emptyList(), Entities.diff(got, JsonValues.list(item.get("entities"))));
            }));
        }
        tests.add(sameCalls("NER bundle", loaded.runner));
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> classificationBundle() {
        return classification("classification", "classification bundle", "input_ids", "attention_mask");
    }

    /** The shipped phone-sized SST-2 model as the phone cut holds it: its int4 file and 16,000-piece vocabulary. */
    @TestFactory
    Stream<DynamicTest> phoneSizedSst2Bundle() {
        return classification("phone", "sst2-phone int4", "input_ids", "attention_mask", "token_type_ids");
    }

    private static Stream<DynamicTest> classification(String sectionName, String label, String... inputs) {
        Map<String, Object> section = section(sectionName);
        Loaded loaded = load(section);
        TextClassificationPipeline pipeline = Pipelines.classifier(loaded.manifest, loaded.artifact, loaded.tokenizer,
                loaded.runner);
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest(label + ": same artifact, maximum and inputs as the Python runtime", () -> {
            assertEquals(section.get("recipe"), loaded.artifact.recipe());
            assertEquals(((Number) section.get("max_length")).intValue(), pipeline.maxLength());
            assertEquals(java.util.Arrays.asList(inputs), loaded.manifest.inputNames());
        }));
        for (Object c : JsonValues.list(section.get("cases"))) {
            Map<String, Object> item = JsonValues.object(c);
            String text = (String) item.get("text");
            String pair = (String) item.get("text_pair");
            tests.add(DynamicTest.dynamicTest(label + " " + JsonValues.shortLabel(text)
                    + (pair == null ? "" : " + " + JsonValues.shortLabel(pair)), () -> {
                Classification got = pair == null ? pipeline.classify(text) : pipeline.classifyPair(text, pair);
                List<Object> want = JsonValues.list(item.get("labels"));
                List<LabelScore> ranked = got.top(null);
                assertEquals(want.size(), ranked.size());
                for (int i = 0; i < ranked.size(); i++) {
                    Map<String, Object> w = JsonValues.object(want.get(i));
                    assertEquals(w.get("label"), ranked.get(i).label(), "rank " + i);
                    assertEquals(((Number) w.get("score")).doubleValue(), ranked.get(i).score(), Entities.SCORE_TOLERANCE);
                }
                assertEquals(item.get("truncated"), got.truncated(), "truncated");
            }));
        }
        tests.add(sameCalls(label, loaded.runner));
        return tests.stream();
    }

    /** Runs last in its factory: every call Python made, Java made, and no other. */
    private static DynamicTest sameCalls(String name, ReplayRunner runner) {
        return DynamicTest.dynamicTest(name + ": Java made exactly the model calls the Python runtime made", () -> {
            Set<String> missing = new HashSet<>(runner.recorded());
            missing.removeAll(runner.requested());
            assertTrue(missing.isEmpty(), "calls Python made but Java did not: " + missing);
            assertEquals(runner.recorded().size(), runner.requested().size());
        });
    }

    static Map<String, Object> section(String name) {
        Path cases = TestFiles.path("pipeline").resolve("pipeline_cases.json");
        return JsonValues.object(Json.parseObject(TestFiles.read(cases)).get(name));
    }

    static Path bundle(Map<String, Object> section) {
        return TestFiles.path("pipeline").resolve((String) section.get("bundle"));
    }

    /** What the app does with a bundle in its assets, with the recorded model in place of LiteRT. */
    static Loaded load(Map<String, Object> section) {
        Path dir = bundle(section);
        try {
            Manifest manifest = Manifest.parse(TestFiles.read(dir.resolve("manifest.json")));
            Set<String> present = new HashSet<>();
            try (Stream<Path> files = Files.list(dir)) {
                files.forEach(p -> present.add(p.getFileName().toString()));
            }
            Artifact artifact = manifest.chooseArtifact("tflite", present, null);
            TokenizerSettings settings = manifest.tokenizer();
            for (String file : new String[] {settings.vocabFile(), "labels.txt", artifact.file()}) {
                try (InputStream in = Files.newInputStream(dir.resolve(file))) {
                    Integrity.verify(manifest, file, in);
                }
            }
            try (InputStream in = Files.newInputStream(dir.resolve("labels.txt"))) {
                Labels.requireSame(Labels.read(in), manifest);
            }
            Vocabulary vocabulary;
            try (InputStream in = Files.newInputStream(dir.resolve(settings.vocabFile()))) {
                vocabulary = Vocabulary.read(in);
            }
            return new Loaded(manifest, artifact, new WordPieceTokenizer(vocabulary, settings), new ReplayRunner(section));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static final class Loaded {
        final Manifest manifest;
        final Artifact artifact;
        final WordPieceTokenizer tokenizer;
        final ReplayRunner runner;

        Loaded(Manifest manifest, Artifact artifact, WordPieceTokenizer tokenizer, ReplayRunner runner) {
            this.manifest = manifest;
            this.artifact = artifact;
            this.tokenizer = tokenizer;
            this.runner = runner;
        }
    }
}
