package pocketbert.core.model;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A model with named signatures, run one row at a time: the seam between the core (tokenization,
 * bucketing, decoding) and an inference engine. The Android app implements it with the LiteRT
 * interpreter ({@code Interpreter.runSignature}); tests implement it with recorded logits, since
 * LiteRT cannot run on the JVM here.
 *
 * <p>Inputs and outputs are matched by name, never by position. A bundle's TFLite model has one
 * signature per sequence-length bucket, {@code seq_<length>}, taking int32 {@code [1, length]}
 * tensors {@code input_ids}, {@code attention_mask} and (except DistilBERT) {@code token_type_ids},
 * and returning {@code logits}. Implementations need not be thread-safe (an interpreter is not).
 */
public interface ModelRunner extends AutoCloseable {
    /** Signature keys of the model, e.g. {@code seq_32}, {@code seq_64}. */
    Set<String> signatureKeys();

    /** Input names of one signature. */
    List<String> inputNames(String signatureKey);

    /** Runs one signature on named inputs; returns every output by name. */
    Map<String, OutputTensor> run(String signatureKey, Map<String, IntTensor> inputs);

    @Override
    void close();
}
