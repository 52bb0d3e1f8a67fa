package pocketbert.core.pipeline;

import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import pocketbert.core.ModelException;
import pocketbert.core.model.IntTensor;
import pocketbert.core.model.ModelRunner;
import pocketbert.core.model.OutputTensor;
import pocketbert.core.model.SequenceBuckets;
import pocketbert.core.text.Encoding;

/**
 * A TFLite model with one signature per sequence-length bucket, run row by row as the Python runtime's
 * LiteRT backend runs it: each row goes to the smallest {@code seq_<length>} signature that holds it,
 * zero-padded (ids, mask and token types, per docs/manifest.md), inputs fed by name; the {@code logits}
 * output is dequantised if it is int8 and cut back to the row's tokens.
 */
public final class BucketedModel {
    static final String LOGITS = "logits";
    private final ModelRunner runner;
    private final SequenceBuckets buckets;
    private final List<String> inputNames;
    private final int numLabels;
    private final boolean perToken;

    private BucketedModel(ModelRunner runner, SequenceBuckets buckets, List<String> inputNames, int numLabels,
                          boolean perToken) {
        this.runner = runner;
        this.buckets = buckets;
        this.inputNames = inputNames;
        this.numLabels = numLabels;
        this.perToken = perToken;
    }

    /**
     * Checks that every bucket signature takes exactly the manifest's inputs.
     *
     * @param perToken NER (logits {@code [1, length, labels]}) rather than classification ({@code [1, labels]})
     */
    public static BucketedModel open(ModelRunner runner, List<String> inputNames, int numLabels, boolean perToken) {
        SequenceBuckets buckets = SequenceBuckets.of(runner.signatureKeys());
        for (int bucket : buckets.lengths()) {
            String key = SequenceBuckets.signatureKey(bucket);
            List<String> names = runner.inputNames(key);
            if (!new HashSet<>(names).equals(new HashSet<>(inputNames))) {
                throw new ModelException("signature " + key + " takes inputs " + names + "; the manifest says "
                        + inputNames, "the model file does not belong to this manifest; copy the bundle again");
            }
        }
        return new BucketedModel(runner, buckets, inputNames, numLabels, perToken);
    }

    public SequenceBuckets buckets() {
        return buckets;
    }

    /** Logits of one row: {@code [tokens][labels]} for NER, {@code [1][labels]} for classification. */
    public float[][] run(Encoding row) {
        int length = row.length();
        int bucket = buckets.bucketFor(length);
        String key = SequenceBuckets.signatureKey(bucket);
        Map<String, IntTensor> inputs = new LinkedHashMap<>();
        for (String name : inputNames) {
            int[] values = new int[bucket]; // zeros: pad id 0, mask 0, token type 0
            int[] source = name.equals("input_ids") ? row.ids()
                    : name.equals("attention_mask") ? row.attentionMask() : row.typeIds();
            System.arraycopy(source, 0, values, 0, length);
            inputs.put(name, IntTensor.row(values));
        }
        OutputTensor logits = runner.run(key, inputs).get(LOGITS);
        if (logits == null) {
            throw new ModelException("signature " + key + " returned no '" + LOGITS + "' output",
                    "convert again with --format tflite");
        }
        int[] shape = logits.shape();
        int[] expected = perToken ? new int[] {1, bucket, numLabels} : new int[] {1, numLabels};
        if (!Arrays.equals(shape, expected)) {
            throw new ModelException("signature " + key + " returned logits of shape " + Arrays.toString(shape)
                    + ", but a " + (perToken ? "NER" : "classification") + " model with " + numLabels + " labels gives "
                    + Arrays.toString(expected),
                    "the model file does not belong to this manifest/labels.txt; copy the bundle again");
        }
        float[] values = logits.toFloats();
        int rows = perToken ? length : 1;
        float[][] out = new float[rows][numLabels];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(values, i * numLabels, out[i], 0, numLabels);
        }
        return out;
    }
}
