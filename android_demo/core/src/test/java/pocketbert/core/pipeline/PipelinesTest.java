package pocketbert.core.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import pocketbert.core.BundleException;
import pocketbert.core.ModelException;
import pocketbert.core.TestFiles;
import pocketbert.core.bundle.Artifact;
import pocketbert.core.bundle.Manifest;
import pocketbert.core.model.IntTensor;
import pocketbert.core.model.OutputTensor;
import pocketbert.core.text.Encoding;
import pocketbert.core.text.Vocabulary;
import pocketbert.core.text.WordPieceTokenizer;

/** How a model is fed (bucket, zero padding, names) and what loading a bundle refuses, with a scripted model. */
class PipelinesTest {
    private static final List<String> BERT_INPUTS = Arrays.asList("input_ids", "attention_mask", "token_type_ids");

    private static Manifest nerManifest() {
        return Manifest.parse(TestFiles.read(TestFiles.path("pipeline").resolve("ner-bundle").resolve("manifest.json")));
    }

    private static Artifact fp32(Manifest m) {
        return m.chooseArtifact("tflite", Collections.singleton("model.tflite"), "fp32");
    }

    private static WordPieceTokenizer tokenizer(Manifest m) {
        return new WordPieceTokenizer(TestFiles.goldenVocabulary(), m.tokenizer());
    }

    @Test
    void rowsGoToTheSmallestBucketZeroPaddedAndFedByName() {
        FakeRunner runner = new FakeRunner(Arrays.asList(32, 16), Arrays.asList("token_type_ids", "attention_mask", "input_ids"),
                (key, inputs) -> {
                    int bucket = inputs.get("input_ids").shape()[1];
                    float[] logits = new float[bucket * 2];
                    logits[0] = 1f;
                    logits[2 * 2 + 1] = 7f;
                    return Collections.singletonMap("logits", OutputTensor.float32(new int[] {1, bucket, 2}, logits));
                });
        BucketedModel model = BucketedModel.open(runner, BERT_INPUTS, 2, true);
        WordPieceTokenizer tokenizer = TestFiles.goldenTokenizer("minilm-uncased");
        Encoding pair = tokenizer.encodePair("hello", "world", 16);
        float[][] out = model.run(pair);
        assertEquals("seq_16", runner.keys.get(0));
        Map<String, IntTensor> fed = runner.calls.get(0);
        assertEquals(new java.util.HashSet<>(BERT_INPUTS), fed.keySet());
        assertArrayEquals(new int[] {101, 7592, 102, 2088, 102, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, fed.get("input_ids").data());
        assertArrayEquals(new int[] {1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, fed.get("attention_mask").data());
        assertArrayEquals(new int[] {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, fed.get("token_type_ids").data());
        assertArrayEquals(new int[] {1, 16}, fed.get("input_ids").shape());
        assertEquals(5, out.length, "logits are cut back to the row's tokens");
        assertArrayEquals(new float[] {1f, 0f}, out[0], 0f);
        assertArrayEquals(new float[] {0f, 7f}, out[2], 0f);
        Encoding longer = tokenizer.encode("a b c d e f g h i j k l m n o p q", 32);
        model.run(longer);
        assertEquals("seq_32", runner.keys.get(1));
    }

    @Test
    void aModelWithOtherInputsOrOutputsIsRefused() {
        ModelException e = assertThrows(ModelException.class, () -> BucketedModel.open(
                FakeRunner.zeros(Arrays.asList(16), Arrays.asList("input_ids", "attention_mask"), 2, true), BERT_INPUTS, 2, true));
        assertTrue(e.problem().startsWith("signature seq_16 takes inputs [input_ids, attention_mask]; the manifest says"),
                e.problem());
        Encoding row = TestFiles.goldenTokenizer("minilm-uncased").encode("hi", 16);
        BucketedModel wrongShape = BucketedModel.open(FakeRunner.zeros(Arrays.asList(16), BERT_INPUTS, 3, true), BERT_INPUTS,
                2, true);
        e = assertThrows(ModelException.class, () -> wrongShape.run(row));
        assertEquals("signature seq_16 returned logits of shape [1, 16, 3], but a NER model with 2 labels gives [1, 16, 2]",
                e.problem());
        BucketedModel noLogits = BucketedModel.open(new FakeRunner(Arrays.asList(16), BERT_INPUTS,
                (k, in) -> Collections.singletonMap("scores", OutputTensor.float32(new int[] {1, 2}, new float[2]))),
                BERT_INPUTS, 2, false);
        e = assertThrows(ModelException.class, () -> noLogits.run(row));
        assertEquals("signature seq_16 returned no 'logits' output", e.problem());
    }

    @Test
    void loadingProbesTheModelWithTheHighestTokenId() {
        Manifest m = nerManifest();
        FakeRunner runner = FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 9, true);
        TokenClassificationPipeline pipeline = Pipelines.ner(m, fp32(m), tokenizer(m), runner);
        assertEquals(32, pipeline.maxLength(), "the largest bucket caps the manifest's maximum");
        assertEquals(8, pipeline.defaultStride());
        assertArrayEquals(new int[] {101, 30521, 102, 0}, Arrays.copyOf(runner.calls.get(0).get("input_ids").data(), 4));
        assertEquals(Collections.emptyList(), pipeline.run("nothing to find", pocketbert.core.ner.Aggregation.SIMPLE));
    }

    @Test
    void loadingRefusesPartsThatDoNotBelongTogether() {
        Manifest m = nerManifest();
        BundleException task = assertThrows(BundleException.class, () -> Pipelines.classifier(m, fp32(m), tokenizer(m),
                FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 9, false)));
        assertEquals("the bundle is a ner model, not classification", task.problem());

        List<String> shorter = new ArrayList<>();
        Vocabulary full = TestFiles.goldenVocabulary();
        for (int i = 0; i < full.size() - 1; i++) {
            shorter.add(full.token(i));
        }
        ModelException vocab = assertThrows(ModelException.class, () -> Pipelines.ner(m, fp32(m),
                new WordPieceTokenizer(Vocabulary.of(shorter), m.tokenizer()),
                FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 9, true)));
        assertEquals("vocab.txt has 30521 tokens but the model was converted with a 30522-token vocabulary: the tokenizer "
                + "does not belong to this model", vocab.problem());

        Manifest smallModel = Manifest.parse(TestFiles.read(TestFiles.path("pipeline").resolve("ner-bundle")
                .resolve("manifest.json")).replaceFirst("\"model_vocab_size\": 30522", "\"model_vocab_size\": 30000"));
        ModelException rows = assertThrows(ModelException.class, () -> Pipelines.ner(smallModel, fp32(smallModel),
                tokenizer(smallModel), FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 9, true)));
        assertEquals("vocab.txt has 30522 tokens but the model's embedding table has 30000 rows: ids from 30000 on would "
                + "fail", rows.problem());

        ModelException buckets = assertThrows(ModelException.class, () -> Pipelines.ner(m, fp32(m), tokenizer(m),
                FakeRunner.zeros(Arrays.asList(16), BERT_INPUTS, 9, true)));
        assertEquals("model.tflite has buckets [16] but the manifest lists [16, 32]", buckets.problem());

        ModelException labels = assertThrows(ModelException.class, () -> Pipelines.ner(m, fp32(m), tokenizer(m),
                FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 5, true)));
        assertTrue(labels.problem().contains("returned logits of shape [1, 16, 5]"), labels.problem());

        ModelException topId = assertThrows(ModelException.class, () -> Pipelines.ner(m, fp32(m), tokenizer(m),
                new FakeRunner(Arrays.asList(16, 32), BERT_INPUTS, (key, inputs) -> {
                    if (inputs.get("input_ids").data()[1] == 30521) {
                        throw new IllegalArgumentException("gather index out of bounds");
                    }
                    return FakeRunner.zeros(Arrays.asList(16, 32), BERT_INPUTS, 9, true).run(key, inputs);
                })));
        assertEquals("the vocabulary has 30522 tokens but model.tflite rejects token id 30521: the tokenizer and the "
                + "model do not belong together", topId.problem());

        ModelException broken = assertThrows(ModelException.class, () -> Pipelines.ner(m, fp32(m), tokenizer(m),
                new FakeRunner(Arrays.asList(16, 32), BERT_INPUTS, (key, inputs) -> {
                    throw new IllegalStateException("interpreter failed");
                })));
        assertEquals("model.tflite fails to run: interpreter failed", broken.problem());
    }
}
