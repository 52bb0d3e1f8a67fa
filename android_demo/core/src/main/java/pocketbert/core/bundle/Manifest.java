package pocketbert.core.bundle;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import pocketbert.core.BundleException;
import pocketbert.core.json.Json;
import pocketbert.core.json.JsonException;
import pocketbert.core.text.TokenizerSettings;

/**
 * A bundle's {@code manifest.json} (docs/manifest.md, schema version 1), read and checked: a missing,
 * non-positive or newer schema version is refused first, then every field the app relies on must be
 * present with its type and range, and every file name must be a plain relative path
 * ({@link BundlePaths}), as the Python runtime's {@code Bundle.open} checks them. Unknown fields are
 * ignored (adding fields does not change the schema version).
 */
public final class Manifest {
    /** Highest schema version this reader understands. */
    public static final int SCHEMA_VERSION = 1;
    public static final List<String> TASKS = Collections.unmodifiableList(Arrays.asList("classification", "ner"));
    public static final Set<String> INPUTS = Collections.unmodifiableSet(
            new HashSet<>(Arrays.asList("input_ids", "attention_mask", "token_type_ids")));
    public static final List<String> PROBLEM_TYPES = Collections.unmodifiableList(Arrays.asList(
            "single_label_classification", "multi_label_classification", "regression", "token_classification"));
    /** Largest max_sequence_length accepted: far above any BERT's position embeddings (512). */
    public static final int MAX_SEQUENCE_LENGTH = 65536;
    private static final String REBUILD = "convert the model again with this version of pocketbert";
    private static final String DAMAGED = "copy the bundle again (the manifest is damaged or was edited), or " + REBUILD;

    private final int schemaVersion;
    private final String task;
    private final String problemType;
    private final List<String> labels;
    private final int maxSequenceLength;
    private final Integer modelVocabSize;
    private final Integer tokenizerMaxLength;
    private final Integer verifiedLength;
    private final Integer logitsWidth;
    private final List<String> inputNames;
    private final TokenizerSettings tokenizer;
    private final List<Artifact> artifacts;
    private final Map<String, FileEntry> files;
    private final List<String> notes;
    private final boolean headInitialized;
    private final List<Map.Entry<String, String>> namedFiles = new ArrayList<>();

    private Manifest(Fields m, int schemaVersion) {
        this.schemaVersion = schemaVersion;
        task = m.requiredString("task");
        if (!TASKS.contains(task)) {
            throw invalid("'task' must be one of " + TASKS + ", not '" + task + "'");
        }
        String problem = m.optionalString("problem_type", null);
        if (problem != null && !PROBLEM_TYPES.contains(problem)) {
            throw invalid("'problem_type' must be one of " + PROBLEM_TYPES + ", not '" + problem + "'");
        }
        problemType = problem != null ? problem
                : task.equals("ner") ? "token_classification" : "single_label_classification";
        labels = Collections.unmodifiableList(m.strings("labels"));
        if (labels.isEmpty()) {
            throw invalid("'labels' must be a non-empty list of strings");
        }
        if (m.raw("max_sequence_length") == null) {
            m.requiredInt("max_sequence_length"); // "is missing"
        }
        Object length = m.raw("max_sequence_length");
        if (!(length instanceof Long) || (Long) length < 2 || (Long) length > MAX_SEQUENCE_LENGTH) {
            throw invalid("'max_sequence_length' must be an integer from 2 to " + MAX_SEQUENCE_LENGTH + ", not "
                    + show(length));
        }
        maxSequenceLength = (int) (long) (Long) length;
        modelVocabSize = m.has("model_vocab_size") ? Integer.valueOf(m.requiredInt("model_vocab_size")) : null;
        List<String> names = new ArrayList<>();
        for (Fields input : m.objects("inputs")) {
            names.add(input.requiredString("name"));
        }
        if (names.isEmpty() || !INPUTS.containsAll(names)) {
            throw invalid("'inputs' must name model inputs among " + INPUTS + ", not " + names);
        }
        inputNames = Collections.unmodifiableList(names);
        tokenizer = TokenizerSettings.fromJson(objectOf(m, "tokenizer"), m.where() + ".tokenizer");
        List<Artifact> list = new ArrayList<>();
        for (Fields artifact : m.objects("artifacts")) {
            Artifact a = new Artifact(artifact);
            addNamedFile("artifacts[" + list.size() + "].file", a.file());
            list.add(a);
        }
        Fields tokenizerFields = m.object("tokenizer");
        tokenizerMaxLength = tokenizerFields.raw("max_sequence_length") instanceof Long
                ? Integer.valueOf(tokenizerFields.requiredInt("max_sequence_length")) : null;
        Fields verification = m.optionalObject("verification");
        verifiedLength = verification.raw("max_length") instanceof Long
                ? Integer.valueOf(verification.requiredInt("max_length")) : null;
        Integer width = null;
        if (m.raw("outputs") instanceof List) {
            for (Fields output : m.objects("outputs")) {
                Object shape = output.raw("shape");
                if ("logits".equals(output.raw("name")) && shape instanceof List && !((List<?>) shape).isEmpty()) {
                    Object last = ((List<?>) shape).get(((List<?>) shape).size() - 1);
                    width = last instanceof Long ? Integer.valueOf(((Long) last).intValue()) : null;
                }
            }
        }
        logitsWidth = width;
        if (tokenizerFields.has("tokenizer_file")) {
            addNamedFile("tokenizer.tokenizer_file", tokenizerFields.requiredString("tokenizer_file"));
        }
        addNamedFile("tokenizer.vocab_file", tokenizer.vocabFile());
        artifacts = Collections.unmodifiableList(list);
        Map<String, FileEntry> entries = new LinkedHashMap<>();
        Fields fileFields = m.optionalObject("files");
        for (String name : fileFields.keys()) {
            addNamedFile("files key", name);
            Fields entry = fileFields.object(name);
            String sha = entry.requiredString("sha256");
            if (!sha.matches("[0-9a-f]{64}")) {
                throw invalid("files." + name + ".sha256 must be 64 lower-case hex digits, not " + show(sha));
            }
            Object bytes = entry.raw("bytes");
            if (!(bytes instanceof Long) || (Long) bytes < 0) {
                throw invalid("files." + name + ".bytes must be a non-negative integer, not " + show(bytes));
            }
            entries.put(name, new FileEntry((Long) bytes, sha));
        }
        files = Collections.unmodifiableMap(entries);
        notes = m.has("notes") && m.raw("notes") != null ? Collections.unmodifiableList(m.strings("notes"))
                : Collections.emptyList();
        headInitialized = m.optionalObject("source").optionalBoolean("head_initialized", false);
    }

    private void addNamedFile(String entry, String file) {
        namedFiles.add(new AbstractMap.SimpleImmutableEntry<>(entry, BundlePaths.checkName(file, entry)));
    }

    private static String show(Object value) {
        return value instanceof String ? "'" + value + "'" : String.valueOf(value);
    }

    /**
     * Checks the raw bytes of {@code manifest.json} against a pin ({@link Pin}; null: none), then parses
     * them as {@link #parse(String)}. The pin and the parser see the same bytes.
     */
    public static Manifest parse(byte[] utf8, String expectedSha256) {
        Pin.check(utf8, expectedSha256);
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(utf8)).toString();
        } catch (CharacterCodingException e) {
            throw new BundleException("manifest.json is not valid UTF-8", DAMAGED, e);
        }
        return parse(text);
    }

    /**
     * Parses and checks {@code manifest.json}. The schema version is checked before anything else, so a
     * newer bundle gets the "newer schema" error even if its fields changed.
     */
    public static Manifest parse(String json) {
        Map<String, Object> root;
        try {
            root = Json.parseObject(json);
        } catch (JsonException e) {
            throw new BundleException("manifest.json is not valid JSON: " + e.getMessage(),
                    "copy the bundle again, or " + REBUILD, e);
        }
        if (!root.containsKey("schema_version")) {
            throw invalid("'schema_version' is missing");
        }
        Object version = root.get("schema_version");
        if (!(version instanceof Long) || (Long) version < 1) {
            throw invalid("'schema_version' must be a positive integer, not " + show(version));
        }
        if ((Long) version > SCHEMA_VERSION) {
            throw new BundleException("bundle schema " + version + " is newer than this app reads (" + SCHEMA_VERSION + ")",
                    "update the app (its pocketbert core reads manifest schema " + SCHEMA_VERSION
                            + "), or convert the model with a pocketbert version that writes schema "
                            + SCHEMA_VERSION);
        }
        return new Manifest(new Fields(root, "manifest.json"), (int) (long) (Long) version);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> objectOf(Fields m, String key) {
        m.object(key); // type check with a clear error
        return (Map<String, Object>) m.raw(key);
    }

    private static BundleException invalid(String what) {
        return new BundleException("manifest.json: " + what, DAMAGED);
    }

    public int schemaVersion() {
        return schemaVersion;
    }

    /** {@code classification} or {@code ner}. */
    public String task() {
        return task;
    }

    /** The manifest's {@code problem_type}; if absent, the task's default (as the Python runtime). */
    public String problemType() {
        return problemType;
    }

    /** Label names in logit order. */
    public List<String> labels() {
        return labels;
    }

    public int maxSequenceLength() {
        return maxSequenceLength;
    }

    /**
     * The longest row any reader feeds this bundle's model, whichever artifact runs: {@code max_sequence_length},
     * or the largest bucket of a TFLite artifact when smaller (the Python runtime's
     * {@code contract.bundle_input_length}). NER windows and classification truncation use it, so every
     * runtime cuts a long text into the same rows.
     */
    public int inputLength() {
        int length = maxSequenceLength;
        for (Artifact a : artifacts) {
            if (a.backend().equals("tflite") && !a.buckets().isEmpty()) {
                length = Math.min(length, Collections.max(a.buckets()));
            }
        }
        return length;
    }

    /** Rows of the model's token embedding table (no id may reach it), or null in manifests written before it. */
    public Integer modelVocabSize() {
        return modelVocabSize;
    }

    /** {@code tokenizer.max_sequence_length} (null: absent); it must equal {@link #maxSequenceLength}. */
    public Integer tokenizerMaxLength() {
        return tokenizerMaxLength;
    }

    /** {@code verification.max_length}, the length every artifact was verified at (null: absent). */
    public Integer verifiedLength() {
        return verifiedLength;
    }

    /** The last dimension of the {@code logits} output as {@code outputs} declares it (null: not declared). */
    public Integer logitsWidth() {
        return logitsWidth;
    }

    /** Model input names, fed by name (DistilBERT has no {@code token_type_ids}). */
    public List<String> inputNames() {
        return inputNames;
    }

    public TokenizerSettings tokenizer() {
        return tokenizer;
    }

    public List<Artifact> artifacts() {
        return artifacts;
    }

    /**
     * Every file name the manifest names, each with the field naming it ({@code artifacts[0].file},
     * {@code tokenizer.vocab_file}, {@code files key}): all plain relative paths ({@link BundlePaths}).
     */
    public List<Map.Entry<String, String>> namedFiles() {
        return Collections.unmodifiableList(namedFiles);
    }

    /** Size and SHA-256 of every bundle file but the manifest. */
    public Map<String, FileEntry> files() {
        return files;
    }

    /** Human-readable warnings to show (fresh head, built-in verification text, accepted damage). */
    public List<String> notes() {
        return notes;
    }

    /** True if the task head was freshly initialised: predictions mean nothing until it is trained. */
    public boolean headInitialized() {
        return headInitialized;
    }

    /**
     * The artifact to run: verified, of {@code backend}, its file among {@code availableFiles}, and of
     * {@code precision} if given; otherwise the fastest precision on a CPU (int8-dynamic, other int8,
     * int4, fp16, fp32), the Python runtime's default rule.
     */
    public Artifact chooseArtifact(String backend, Set<String> availableFiles, String precision) {
        List<Artifact> candidates = new ArrayList<>();
        List<String> present = new ArrayList<>();
        for (Artifact a : artifacts) {
            if (a.backend().equals(backend) && a.passed() && availableFiles.contains(a.file())) {
                present.add(a.recipe());
                if (precision == null || a.precision().equals(precision)) {
                    candidates.add(a);
                }
            }
        }
        if (candidates.isEmpty()) {
            List<String> all = new ArrayList<>();
            for (Artifact a : artifacts) {
                all.add(a.recipe() + (availableFiles.contains(a.file()) ? "" : " (file not present)"));
            }
            throw new BundleException("no verified " + backend + (precision == null ? "" : ":" + precision)
                    + " artifact whose file is present; the manifest lists " + all,
                    "copy the bundle with android_demo/copy_bundle.sh, converted with --format tflite");
        }
        return Collections.min(candidates, Comparator.comparingInt(Artifact::precisionRank));
    }
}
