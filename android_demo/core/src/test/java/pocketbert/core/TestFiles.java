package pocketbert.core;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import pocketbert.core.json.Json;
import pocketbert.core.text.TokenizerSettings;
import pocketbert.core.text.Vocabulary;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * The files the tests read, passed by run_tests.sh as system properties. A missing property or file
 * fails the test with the reason (never a skip): these tests are the proof that Java equals Python.
 */
public final class TestFiles {
    private static final Map<String, WordPieceTokenizer> TOKENIZERS = new HashMap<>();
    private static final Map<Path, List<Map<String, Object>>> JSON_LINES = new HashMap<>();
    private static Vocabulary goldenVocabulary;

    private TestFiles() {
    }

    /** The file or directory named by system property {@code pocketbert.<name>}. */
    public static Path path(String name) {
        String value = System.getProperty("pocketbert." + name);
        if (value == null || value.isEmpty()) {
            fail("system property pocketbert." + name + " is not set: run the tests with android_demo/core/run_tests.sh, "
                    + "which generates the test files with the repository's Python runtime and passes them");
        }
        Path path = Paths.get(value);
        if (!Files.exists(path)) {
            fail("pocketbert." + name + " = " + path + " does not exist");
        }
        return path;
    }

    /** tests/golden of the repository. */
    public static Path golden(String file) {
        return path("golden").resolve(file);
    }

    public static String read(Path path) {
        try {
            return new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One JSON object per line. */
    public static synchronized List<Map<String, Object>> jsonLines(Path path) {
        return JSON_LINES.computeIfAbsent(path, p -> {
            List<Map<String, Object>> out = new ArrayList<>();
            for (String line : read(p).split("\n")) {
                if (!line.isEmpty()) {
                    out.add(Json.parseObject(line));
                }
            }
            return out;
        });
    }

    /** The vocabulary the golden vectors were written with, checked against their recorded SHA-256. */
    public static synchronized Vocabulary goldenVocabulary() {
        if (goldenVocabulary == null) {
            Path vocab = path("vocab");
            Map<String, Object> settings = goldenSettings("minilm-uncased");
            String expected = (String) settings.get("vocab_sha256");
            String actual = sha256(vocab);
            if (!actual.equals(expected)) {
                fail(vocab + " has SHA-256 " + actual + " but the golden vectors were written with " + expected
                        + " (" + settings.get("vocab_reference") + ")");
            }
            try (InputStream in = Files.newInputStream(vocab)) {
                goldenVocabulary = Vocabulary.read(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return goldenVocabulary;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> goldenSettings(String name) {
        Map<String, Object> all = Json.parseObject(read(golden("tokenizers.json")));
        Object settings = all.get(name);
        if (settings == null) {
            fail("tests/golden/tokenizers.json has no tokenizer '" + name + "'");
        }
        return (Map<String, Object>) settings;
    }

    /** A golden tokenizer by name (tests/golden/tokenizers.json + the golden vocabulary). */
    public static synchronized WordPieceTokenizer goldenTokenizer(String name) {
        return TOKENIZERS.computeIfAbsent(name, n -> new WordPieceTokenizer(goldenVocabulary(),
                TokenizerSettings.fromJson(goldenSettings(n), "tokenizers.json/" + n)));
    }

    public static String sha256(Path path) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            StringBuilder hex = new StringBuilder();
            for (byte b : digest.digest(Files.readAllBytes(path))) {
                hex.append(String.format("%02x", b & 0xff));
            }
            return hex.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
