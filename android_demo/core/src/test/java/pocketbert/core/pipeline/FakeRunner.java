package pocketbert.core.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiFunction;
import pocketbert.core.model.IntTensor;
import pocketbert.core.model.ModelRunner;
import pocketbert.core.model.OutputTensor;

/** A scripted model: given signatures and input names, it answers with a function and keeps every call. */
final class FakeRunner implements ModelRunner {
    private final Set<String> signatures = new TreeSet<>();
    private final List<String> inputNames;
    private final BiFunction<String, Map<String, IntTensor>, Map<String, OutputTensor>> answer;
    final List<Map<String, IntTensor>> calls = new ArrayList<>();
    final List<String> keys = new ArrayList<>();

    FakeRunner(List<Integer> buckets, List<String> inputNames,
               BiFunction<String, Map<String, IntTensor>, Map<String, OutputTensor>> answer) {
        for (int b : buckets) {
            signatures.add("seq_" + b);
        }
        this.inputNames = inputNames;
        this.answer = answer;
    }

    /** Answers every call with zero logits of the given per-token or per-sequence shape. */
    static FakeRunner zeros(List<Integer> buckets, List<String> inputNames, int labels, boolean perToken) {
        return new FakeRunner(buckets, inputNames, (key, inputs) -> {
            int bucket = Integer.parseInt(key.substring(4));
            int[] shape = perToken ? new int[] {1, bucket, labels} : new int[] {1, labels};
            return Collections.singletonMap("logits", OutputTensor.float32(shape, new float[perToken ? bucket * labels : labels]));
        });
    }

    @Override
    public Set<String> signatureKeys() {
        return signatures;
    }

    @Override
    public List<String> inputNames(String signatureKey) {
        return inputNames;
    }

    @Override
    public Map<String, OutputTensor> run(String signatureKey, Map<String, IntTensor> inputs) {
        keys.add(signatureKey);
        calls.add(new LinkedHashMap<>(inputs));
        return answer.apply(signatureKey, inputs);
    }

    @Override
    public void close() {
    }
}
