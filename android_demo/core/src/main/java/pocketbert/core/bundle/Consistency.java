package pocketbert.core.bundle;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import pocketbert.core.BundleException;
import pocketbert.core.text.SpecialToken;

/**
 * The manifest against itself and the bundle's own files, pin or no pin: the Python runtime's
 * {@code contract.check_consistency}, rule for rule (docs/manifest.md, "Reading a bundle"). A checksum proves
 * a file is the one listed, not that the manifest tells the truth about it: labels reversed in the manifest
 * alone would put the other label on every answer. Every loader goes through {@link #check}:
 * {@link BundleDirectory#open} and the app's asset loader.
 */
public final class Consistency {
    static final String DISAGREE = "copy the bundle again from its source (its manifest.json or one of its files "
            + "was edited); if the change was meant, convert the model again so that the converter writes both";

    private Consistency() {
    }

    /**
     * Refuses {@code m} unless it agrees with itself and with the files {@code read} returns: a listed file's
     * bytes, already checked against its size and SHA-256, or null when the bundle does not hold it.
     */
    public static void check(Manifest m, Function<String, byte[]> read) {
        byte[] labelsFile = read.apply("labels.txt");
        if (labelsFile != null) {
            List<String> lines;
            try {
                lines = Labels.read(new ByteArrayInputStream(labelsFile));
            } catch (IOException e) {
                throw new BundleException("cannot read labels.txt: " + e, DISAGREE, e);
            }
            need(lines.equals(m.labels()), "'labels' " + m.labels() + " disagree with labels.txt " + lines
                    + ": every answer would carry another label's name");
        }
        Integer vocabSize = m.tokenizer().vocabSize();
        byte[] vocab = read.apply(m.tokenizer().vocabFile());
        if (vocab != null && vocabSize != null) {
            int count = lineCount(vocab);
            need(count == vocabSize, "'tokenizer.vocab_size' is " + vocabSize + " but " + m.tokenizer().vocabFile()
                    + " holds " + count + " tokens");
        }
        if (m.modelVocabSize() != null && vocabSize != null) {
            need(vocabSize <= m.modelVocabSize(), "'tokenizer.vocab_size' " + vocabSize + " is larger than the model's "
                    + "word table ('model_vocab_size' " + m.modelVocabSize() + "): its last ids would be out of range");
        }
        if (vocabSize != null) {
            for (Map.Entry<String, SpecialToken> special : m.tokenizer().specialTokens().entrySet()) {
                int id = special.getValue().id();
                need(id < vocabSize, "'tokenizer.special_tokens." + special.getKey() + "' has id " + id
                        + ", outside the " + vocabSize + "-token vocabulary");
            }
        }
        if (vocab != null) {
            checkSpecialLines(m, lines(vocab));
        }
        if (m.tokenizerMaxLength() != null) {
            need(m.tokenizerMaxLength() == m.maxSequenceLength(), "'max_sequence_length' is " + m.maxSequenceLength()
                    + " but 'tokenizer.max_sequence_length' is " + m.tokenizerMaxLength());
        }
        if (m.verifiedLength() != null) {
            need(m.verifiedLength() == m.inputLength(), "the bundle's input length is " + m.inputLength()
                    + " ('max_sequence_length' " + m.maxSequenceLength() + ", TFLite buckets) but its artifacts were "
                    + "verified at " + m.verifiedLength() + " tokens ('verification.max_length')");
        }
        List<String> inputs = m.inputNames();
        need(new HashSet<>(inputs).size() == inputs.size() && inputs.contains("input_ids")
                && inputs.contains("attention_mask"), "'inputs' " + inputs + " must name input_ids and attention_mask, "
                + "each once");
        if (m.logitsWidth() != null) {
            need(m.logitsWidth() == m.labels().size(), "the 'logits' output has " + m.logitsWidth()
                    + " columns but 'labels' has " + m.labels().size() + " names");
        }
        for (int i = 0; i < m.artifacts().size(); i++) {
            checkArtifact(m.artifacts().get(i), "artifacts[" + i + "]", m, vocabSize);
        }
    }

    private static void checkArtifact(Artifact a, String entry, Manifest m, Integer vocabSize) {
        if (a.backend().equals("tflite") && !a.buckets().isEmpty() && !a.signatures().isEmpty()) {
            List<String> named = new ArrayList<>();
            for (int bucket : a.buckets()) {
                named.add("seq_" + bucket); // SequenceBuckets.signatureKey
            }
            need(named.equals(a.signatures()), "'" + entry + ".details.signatures' " + a.signatures()
                    + " do not name its buckets " + a.buckets());
        }
        if (a.metadataLabels() != null) {
            need(a.metadataLabels().equals(m.labels()), "'" + entry + "' metadata labels " + a.metadataLabels()
                    + " disagree with 'labels' " + m.labels());
        }
        if (a.metadataVocabSize() != null && vocabSize != null) {
            need(a.metadataVocabSize().equals(vocabSize), "'" + entry + "' metadata vocab_size " + a.metadataVocabSize()
                    + " disagrees with 'tokenizer.vocab_size' " + vocabSize);
        }
    }

    /**
     * This reader tokenizes from vocab.txt with the manifest's ids: each special token must be the line its id
     * names (a token the vocabulary lacks is never emitted).
     */
    private static void checkSpecialLines(Manifest m, List<String> lines) {
        Set<String> known = new HashSet<>(lines);
        for (Map.Entry<String, SpecialToken> special : m.tokenizer().specialTokens().entrySet()) {
            SpecialToken token = special.getValue();
            if (token.id() < lines.size() && known.contains(token.token())) {
                need(lines.get(token.id()).equals(token.token()), "'tokenizer.special_tokens." + special.getKey()
                        + "' is '" + token.token() + "' with id " + token.id() + ", but line " + (token.id() + 1)
                        + " of " + m.tokenizer().vocabFile() + " is '" + lines.get(token.id()) + "'");
            }
        }
    }

    /** The lines of a UTF-8 text file, without a last empty one after the final newline. */
    static List<String> lines(byte[] data) {
        List<String> out = new ArrayList<>(Arrays.asList(new String(data, StandardCharsets.UTF_8).split("\n", -1)));
        if (!out.isEmpty() && out.get(out.size() - 1).isEmpty()) {
            out.remove(out.size() - 1);
        }
        return out;
    }

    /** Lines of a text file: newlines, plus a last line without one. */
    static int lineCount(byte[] data) {
        int count = 0;
        for (byte b : data) {
            count += b == '\n' ? 1 : 0;
        }
        return count + (data.length > 0 && data[data.length - 1] != '\n' ? 1 : 0);
    }

    private static void need(boolean ok, String problem) {
        if (!ok) {
            throw new BundleException("manifest.json: " + problem, DISAGREE);
        }
    }
}
