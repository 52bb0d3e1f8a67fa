package pocketbert.core.pipeline;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import pocketbert.core.model.IntTensor;
import pocketbert.core.model.ModelRunner;
import pocketbert.core.model.OutputTensor;

/**
 * A stand-in model for one bucket that answers each window of a golden NER record with that window's
 * golden logits, found by the window's token ids (the padded rest of the bucket gets zeros). The real
 * LiteRT interpreter cannot run on the JVM; this is what lets the pipeline's tokenize → run → decode
 * chain be tested here. An unknown row is an error: the pipeline fed something the golden file lacks.
 */
final class GoldenLogitsRunner implements ModelRunner {
    private final int bucket;
    private final int numLabels;
    private final List<String> inputNames;
    private final Map<String, float[][]> logitsByIds = new HashMap<>();

    GoldenLogitsRunner(int bucket, int numLabels, List<String> inputNames) {
        this.bucket = bucket;
        this.numLabels = numLabels;
        this.inputNames = inputNames;
    }

    void answer(int[] ids, float[][] logits) {
        logitsByIds.put(Arrays.toString(ids), logits);
    }

    @Override
    public Set<String> signatureKeys() {
        return Collections.singleton("seq_" + bucket);
    }

    @Override
    public List<String> inputNames(String signatureKey) {
        return inputNames;
    }

    @Override
    public Map<String, OutputTensor> run(String signatureKey, Map<String, IntTensor> inputs) {
        int[] ids = inputs.get("input_ids").data();
        int[] mask = inputs.get("attention_mask").data();
        int length = 0;
        while (length < mask.length && mask[length] == 1) {
            length++;
        }
        float[][] rows = logitsByIds.get(Arrays.toString(Arrays.copyOf(ids, length)));
        if (rows == null) {
            throw new IllegalStateException("no golden window has ids " + Arrays.toString(Arrays.copyOf(ids, length)));
        }
        float[] out = new float[bucket * numLabels];
        for (int t = 0; t < rows.length; t++) {
            System.arraycopy(rows[t], 0, out, t * numLabels, numLabels);
        }
        return Collections.singletonMap("logits", OutputTensor.float32(new int[] {1, bucket, numLabels}, out));
    }

    @Override
    public void close() {
    }
}
