package pocketbert.core.pipeline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import pocketbert.core.JsonValues;
import pocketbert.core.model.IntTensor;
import pocketbert.core.model.ModelRunner;
import pocketbert.core.model.OutputTensor;

/**
 * A stand-in for a real bundle's TFLite model: it answers exactly the signature calls the Python
 * runtime made on that model through LiteRT (tools/make_pipeline_cases.py recorded signature key,
 * named inputs and the raw {@code logits}: int8 with scale and zero point, or float32). Any other
 * call is an error naming what Java fed, so Java must bucket, pad and name its inputs as Python does.
 */
final class ReplayRunner implements ModelRunner {
    private final Map<String, List<String>> signatures = new TreeMap<>();
    private final Map<String, Map<String, Object>> calls = new HashMap<>();
    private final Set<String> requested = new LinkedHashSet<>();

    ReplayRunner(Map<String, Object> section) {
        for (Map.Entry<String, Object> s : JsonValues.object(section.get("signatures")).entrySet()) {
            signatures.put(s.getKey(), JsonValues.strings(JsonValues.object(s.getValue()).get("inputs")));
        }
        for (Object c : JsonValues.list(section.get("calls"))) {
            Map<String, Object> call = JsonValues.object(c);
            Map<String, int[]> inputs = new TreeMap<>();
            for (Map.Entry<String, Object> in : JsonValues.object(call.get("inputs")).entrySet()) {
                inputs.put(in.getKey(), JsonValues.ints(in.getValue()));
            }
            calls.put(key((String) call.get("signature"), inputs), call);
        }
    }

    private static String key(String signature, Map<String, int[]> inputs) {
        StringBuilder key = new StringBuilder(signature);
        for (Map.Entry<String, int[]> in : new TreeMap<>(inputs).entrySet()) {
            key.append(' ').append(in.getKey()).append('=').append(Arrays.toString(in.getValue()));
        }
        return key.toString();
    }

    /** Keys of the calls Python made. */
    Set<String> recorded() {
        return Collections.unmodifiableSet(calls.keySet());
    }

    /** Keys of the calls Java made. */
    Set<String> requested() {
        return Collections.unmodifiableSet(requested);
    }

    @Override
    public Set<String> signatureKeys() {
        return signatures.keySet();
    }

    @Override
    public List<String> inputNames(String signatureKey) {
        return new ArrayList<>(signatures.get(signatureKey));
    }

    @Override
    public Map<String, OutputTensor> run(String signatureKey, Map<String, IntTensor> inputs) {
        Map<String, int[]> values = new TreeMap<>();
        for (Map.Entry<String, IntTensor> in : inputs.entrySet()) {
            int[] shape = in.getValue().shape();
            if (shape.length != 2 || shape[0] != 1 || !signatureKey.equals("seq_" + shape[1])) {
                throw new IllegalStateException(in.getKey() + " has shape " + Arrays.toString(shape) + " for " + signatureKey);
            }
            values.put(in.getKey(), in.getValue().data());
        }
        String key = key(signatureKey, values);
        requested.add(key);
        Map<String, Object> call = calls.get(key);
        if (call == null) {
            throw new IllegalStateException("Java fed inputs the Python runtime never fed: " + key);
        }
        int[] shape = JsonValues.ints(call.get("shape"));
        OutputTensor logits;
        if (call.get("dtype").equals("int8")) {
            int[] raw = JsonValues.ints(call.get("values"));
            byte[] bytes = new byte[raw.length];
            for (int i = 0; i < raw.length; i++) {
                bytes[i] = (byte) raw[i];
            }
            logits = OutputTensor.int8(shape, bytes, ((Number) call.get("scale")).floatValue(),
                    ((Number) call.get("zero_point")).intValue());
        } else if (call.get("dtype").equals("float32")) {
            logits = OutputTensor.float32(shape, JsonValues.floats(call.get("values")));
        } else {
            throw new IllegalStateException("unexpected logits dtype " + call.get("dtype"));
        }
        return Collections.singletonMap("logits", logits);
    }

    @Override
    public void close() {
    }
}
