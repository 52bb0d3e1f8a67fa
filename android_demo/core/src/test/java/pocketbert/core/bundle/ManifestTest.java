package pocketbert.core.bundle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import pocketbert.core.BundleException;
import pocketbert.core.TestFiles;
import pocketbert.core.text.TokenizerSettings;

/**
 * manifest.json as the converter writes it (two bundles converted at test time) and as it must not be:
 * a newer schema, missing or mistyped fields, invalid JSON.
 */
class ManifestTest {
    private static Path bundle(String name) {
        return TestFiles.path("pipeline").resolve(name);
    }

    private static String manifestText(String bundle) {
        return TestFiles.read(bundle(bundle).resolve("manifest.json"));
    }

    @Test
    void readsAConverterNerManifest() {
        Manifest m = Manifest.parse(manifestText("ner-bundle"));
        assertEquals(1, m.schemaVersion());
        assertEquals("ner", m.task());
        assertEquals("token_classification", m.problemType());
        assertEquals(Arrays.asList("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"),
                m.labels());
        assertEquals(Arrays.asList("input_ids", "attention_mask", "token_type_ids"), m.inputNames());
        assertTrue(m.maxSequenceLength() >= 32);
        assertEquals(Integer.valueOf(30522), m.modelVocabSize());
        TokenizerSettings t = m.tokenizer();
        assertEquals("vocab.txt", t.vocabFile());
        assertEquals(Integer.valueOf(30522), t.vocabSize());
        assertTrue(t.lowercase() && t.stripAccents() && t.cleanText() && t.chineseChars());
        assertEquals("##", t.continuingSubwordPrefix());
        assertEquals(100, t.maxInputCharsPerWord());
        assertEquals(101, t.special("cls").id());
        assertEquals("[UNK]", t.special("unk").token());
        assertEquals(Arrays.asList("tflite:fp32", "tflite:int8-static"),
                Arrays.asList(m.artifacts().stream().map(Artifact::recipe).toArray()));
        for (Artifact a : m.artifacts()) {
            assertTrue(a.passed(), a.recipe());
            assertEquals(Arrays.asList(16, 32), a.buckets());
            assertEquals(Arrays.asList("seq_16", "seq_32"), a.signatures());
        }
        assertTrue(m.files().keySet().containsAll(Arrays.asList("vocab.txt", "labels.txt", "model.tflite",
                "model.int8-static.tflite")), m.files().keySet().toString());
        assertFalse(m.files().containsKey("manifest.json"));
        assertFalse(m.headInitialized());
    }

    @Test
    void readsAConverterDistilBertClassificationManifest() {
        Manifest m = Manifest.parse(manifestText("cls-bundle"));
        assertEquals("classification", m.task());
        assertEquals("single_label_classification", m.problemType());
        assertEquals(Arrays.asList("negative", "neutral", "positive"), m.labels());
        assertEquals(Arrays.asList("input_ids", "attention_mask"), m.inputNames());
    }

    @Test
    void choosesTheFastestVerifiedArtifactWhoseFileIsPresent() {
        Manifest m = Manifest.parse(manifestText("ner-bundle"));
        Set<String> both = new HashSet<>(Arrays.asList("model.tflite", "model.int8-static.tflite"));
        assertEquals("tflite:int8-static", m.chooseArtifact("tflite", both, null).recipe());
        assertEquals("tflite:fp32", m.chooseArtifact("tflite", both, "fp32").recipe());
        assertEquals("tflite:fp32", m.chooseArtifact("tflite", Collections.singleton("model.tflite"), null).recipe());
        BundleException e = assertThrows(BundleException.class,
                () -> m.chooseArtifact("tflite", Collections.singleton("model.tflite"), "int8-dynamic"));
        assertTrue(e.problem().contains("no verified tflite:int8-dynamic artifact"), e.getMessage());
        e = assertThrows(BundleException.class, () -> m.chooseArtifact("tflite", Collections.emptySet(), null));
        assertTrue(e.problem().contains("model.tflite (file not present)") || e.problem().contains("(file not present)"),
                e.getMessage());
        Manifest cls = Manifest.parse(manifestText("cls-bundle"));
        assertEquals("tflite:int8-dynamic", cls.chooseArtifact("tflite",
                new HashSet<>(Arrays.asList("model.tflite", "model.int8-dynamic.tflite")), null).recipe());
    }

    @Test
    void theInputLengthIsTheBundlesNotTheBackends() {
        // the Python runtime's contract.bundle_input_length: ONNX and TFLite readers cut texts alike
        String ner = manifestText("ner-bundle");
        assertEquals(32, Manifest.parse(ner).inputLength());
        String shorter = ner.replaceFirst("\"max_sequence_length\": \\d+", "\"max_sequence_length\": 20");
        assertEquals(20, Manifest.parse(shorter).inputLength());
        String noBuckets = ner.replaceAll("\"buckets\": \\[[^\\]]*\\],?", "");
        Manifest plain = Manifest.parse(noBuckets);
        assertEquals(plain.maxSequenceLength(), plain.inputLength());
    }

    @Test
    void refusesANewerSchemaWithAClearErrorBeforeLookingAtAnythingElse() {
        String newer = manifestText("ner-bundle").replaceFirst("\"schema_version\": 1", "\"schema_version\": 2");
        BundleException e = assertThrows(BundleException.class, () -> Manifest.parse(newer));
        assertEquals("bundle schema 2 is newer than this app reads (1)", e.problem());
        assertTrue(e.fix().contains("update the app"), e.fix());
        // a newer schema may have renamed anything: the version error still comes first
        e = assertThrows(BundleException.class, () -> Manifest.parse("{\"schema_version\": 7, \"tasks\": []}"));
        assertEquals("bundle schema 7 is newer than this app reads (1)", e.problem());
    }

    @Test
    void aSchemaVersionThatIsNotAPositiveIntegerOrMissingIsRefused() {
        String[][] cases = {{"\"1\"", "'1'"}, {"-1", "-1"}, {"0", "0"}, {"1.0", "1.0"}, {"true", "true"}, {"null", "null"}};
        for (String[] c : cases) {
            BundleException e = assertThrows(BundleException.class,
                    () -> Manifest.parse(manifestText("cls-bundle").replaceFirst("\"schema_version\": 1", "\"schema_version\": " + c[0])));
            assertEquals("manifest.json: 'schema_version' must be a positive integer, not " + c[1], e.problem());
        }
        String missing = manifestText("cls-bundle").replaceFirst("\"schema_version\": 1,", "");
        assertEquals("manifest.json: 'schema_version' is missing",
                assertThrows(BundleException.class, () -> Manifest.parse(missing)).problem());
    }

    @Test
    void unknownFieldsAreIgnored() {
        String text = manifestText("cls-bundle").replaceFirst("\"schema_version\": 1,",
                "\"schema_version\": 1, \"a_field_from_the_future\": {\"x\": [1]},");
        Manifest m = Manifest.parse(text);
        assertEquals(1, m.schemaVersion());
        assertEquals("classification", m.task());
    }

    @Test
    void namesTheFieldThatIsMissingOrMistyped() {
        String good = manifestText("cls-bundle");
        assertProblem(good.replaceFirst("\"task\": \"classification\"", "\"task\": \"summarization\""),
                "manifest.json: 'task' must be one of [classification, ner], not 'summarization'");
        assertProblem(good.replaceFirst("\"task\": \"classification\",", ""), "manifest.json: 'task' is missing");
        for (String length : new String[] {"\"512\"", "1000000000000", "1e12", "65537", "1", "true"}) {
            assertProblem(good.replaceFirst("\"max_sequence_length\": \\d+", "\"max_sequence_length\": " + length),
                    "manifest.json: 'max_sequence_length' must be an integer from 2 to 65536, not "
                            + (length.startsWith("\"") ? "'512'" : length.equals("1e12") ? "1.0E12" : length));
        }
        assertProblem(good.replaceFirst("\"problem_type\": \"[a-z_]+\"", "\"problem_type\": \"ranking\""),
                "manifest.json: 'problem_type' must be one of");
        assertProblem(good.replaceFirst("\"file\": \"model.tflite\"", "\"file\": \"../outside/evil.tflite\""),
                "manifest.json: artifacts[0].file '../outside/evil.tflite' is not a path inside the bundle: it has a '..'");
        assertProblem(good.replaceFirst("\"file\": \"model.tflite\"", "\"file\": \"/etc/passwd\""),
                "manifest.json: artifacts[0].file '/etc/passwd' is not a path inside the bundle: it is an absolute path");
        assertProblem(good.replaceFirst("\"vocab_file\": \"vocab.txt\"", "\"vocab_file\": \"../../vocab.txt\""),
                "manifest.json: tokenizer.vocab_file '../../vocab.txt' is not a path inside the bundle");
        assertProblem(good.replaceFirst("\"labels.txt\": \\{", "\"sub\\\\\\\\..\\\\\\\\x\": {"),
                "manifest.json: files key 'sub\\..\\x' is not a path inside the bundle: it contains a backslash");
        assertProblem(good.replaceFirst("\"labels\": \\[[^\\]]*\\]", "\"labels\": []"),
                "manifest.json: 'labels' must be a non-empty list of strings");
        assertProblem(good.replaceFirst("\"name\": \"input_ids\"", "\"name\": \"pixel_values\""),
                "manifest.json: 'inputs' must name model inputs among");
        assertProblem(good.replaceFirst("\"do_lower_case\": true", "\"do_lower_case\": \"yes\""),
                "manifest.json.tokenizer: 'do_lower_case' must be true or false, not string");
        assertProblem(good.replaceFirst("\"recipe\": \"tflite:fp32\",", ""), "manifest.json.artifacts[0]: 'recipe' is missing");
    }

    @Test
    void invalidJsonIsABundleError() {
        BundleException e = assertThrows(BundleException.class, () -> Manifest.parse("{\"task\": \"ner\""));
        assertTrue(e.problem().startsWith("manifest.json is not valid JSON"), e.problem());
    }

    private static void assertProblem(String manifest, String expected) {
        BundleException e = assertThrows(BundleException.class, () -> Manifest.parse(manifest));
        assertTrue(e.problem().startsWith(expected), "expected '" + expected + "', got: " + e.problem());
        assertTrue(e.fix() != null && !e.fix().isEmpty());
    }
}
