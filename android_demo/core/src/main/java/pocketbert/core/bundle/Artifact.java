package pocketbert.core.bundle;

import java.util.Collections;
import java.util.List;

/** One model file of a bundle: an {@code artifacts[]} entry of the manifest. */
public final class Artifact {
    private final String recipe;
    private final String backend;
    private final String precision;
    private final String file;
    private final boolean passed;
    private final List<Integer> buckets;
    private final List<String> signatures;
    private final List<String> metadataLabels;
    private final Integer metadataVocabSize;

    Artifact(Fields json) {
        recipe = json.requiredString("recipe");
        backend = json.requiredString("backend");
        precision = json.requiredString("precision");
        file = json.requiredString("file");
        passed = json.optionalObject("verification").optionalBoolean("passed", false);
        Fields details = json.optionalObject("details");
        buckets = details.has("buckets") ? Collections.unmodifiableList(details.ints("buckets")) : Collections.emptyList();
        signatures = details.has("signatures") ? Collections.unmodifiableList(details.strings("signatures"))
                : Collections.emptyList();
        Fields metadata = details.optionalObject("metadata");
        metadataLabels = metadata.raw("labels") instanceof List ? metadata.strings("labels") : null;
        metadataVocabSize = metadata.raw("vocab_size") instanceof Long ? Integer.valueOf(metadata.requiredInt("vocab_size"))
                : null;
    }

    /** The labels embedded in the TFLite file's metadata, as the manifest records them (null: not recorded). */
    public List<String> metadataLabels() {
        return metadataLabels;
    }

    /** The vocabulary size embedded in the TFLite file's metadata (null: not recorded). */
    public Integer metadataVocabSize() {
        return metadataVocabSize;
    }

    /** {@code backend:precision}, e.g. {@code tflite:int8-dynamic}. */
    public String recipe() {
        return recipe;
    }

    public String backend() {
        return backend;
    }

    public String precision() {
        return precision;
    }

    /** File name in the bundle. */
    public String file() {
        return file;
    }

    /** Whether the converter's verification passed (always true in a written bundle). */
    public boolean passed() {
        return passed;
    }

    /** TFLite sequence-length buckets, ascending (empty for ONNX). */
    public List<Integer> buckets() {
        return buckets;
    }

    /** TFLite signature keys, {@code seq_<length>} (empty for ONNX). */
    public List<String> signatures() {
        return signatures;
    }

    /** Default preference on a CPU, lower first: int8-dynamic, other int8, int4, fp16, fp32, anything else. */
    int precisionRank() {
        if (precision.equals("int8-dynamic")) {
            return 0;
        }
        if (precision.startsWith("int8")) {
            return 1;
        }
        if (precision.startsWith("int4")) {
            return 2;
        }
        if (precision.equals("fp16")) {
            return 3;
        }
        return precision.equals("fp32") ? 4 : 5;
    }

    @Override
    public String toString() {
        return recipe + " (" + file + ")";
    }
}
