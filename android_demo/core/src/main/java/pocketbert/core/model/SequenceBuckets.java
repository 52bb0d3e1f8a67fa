package pocketbert.core.model;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import pocketbert.core.InputException;
import pocketbert.core.ModelException;

/** The sequence-length buckets of a TFLite model, from its {@code seq_<length>} signature keys. */
public final class SequenceBuckets {
    public static final String PREFIX = "seq_";
    private final List<Integer> lengths;

    private SequenceBuckets(List<Integer> lengths) {
        this.lengths = lengths;
    }

    /** Buckets of the {@code seq_<length>} keys; other keys are ignored; none is a {@link ModelException}. */
    public static SequenceBuckets of(Collection<String> signatureKeys) {
        List<Integer> lengths = new ArrayList<>();
        for (String key : signatureKeys) {
            if (key.startsWith(PREFIX) && key.length() > PREFIX.length()
                    && key.substring(PREFIX.length()).chars().allMatch(c -> c >= '0' && c <= '9')) {
                lengths.add(Integer.parseInt(key.substring(PREFIX.length())));
            }
        }
        if (lengths.isEmpty()) {
            throw new ModelException("the model has signatures " + new ArrayList<>(signatureKeys)
                    + "; expected seq_<length> signatures", "convert again with --format tflite");
        }
        Collections.sort(lengths);
        return new SequenceBuckets(Collections.unmodifiableList(lengths));
    }

    /** Lengths, ascending. */
    public List<Integer> lengths() {
        return lengths;
    }

    public int largest() {
        return lengths.get(lengths.size() - 1);
    }

    /** The smallest bucket that holds {@code length} tokens (the runtime's rule). */
    public int bucketFor(int length) {
        for (int bucket : lengths) {
            if (bucket >= length) {
                return bucket;
            }
        }
        throw new InputException("a row of " + length + " tokens is longer than the largest bucket (" + largest() + ")",
                "truncate to the pipeline's max length (the pipelines do this)");
    }

    public static String signatureKey(int bucket) {
        return PREFIX + bucket;
    }
}
