package pocketbert.core.bundle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import pocketbert.core.BundleException;
import pocketbert.core.TestFiles;

/**
 * A bundle directory is a security boundary: real copies of a converted bundle, tampered with as a
 * hostile download would be ({@code ..} and absolute names, symbolic links out of the directory, a pin
 * that does not match), must be refused before any file outside the bundle is read.
 */
class BundleDirectoryTest {
    private static final Path CONVERTED = TestFiles.path("pipeline").resolve("ner-bundle");

    @TempDir
    Path tmp;

    /** A copy of the converted NER bundle in tmp/bundle, beside tmp/outside (which the bundle must not reach). */
    private Path bundle() throws IOException {
        Path copy = Files.createDirectory(tmp.resolve("bundle"));
        Files.createDirectory(tmp.resolve("outside"));
        try (Stream<Path> files = Files.list(CONVERTED)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Files.copy(file, copy.resolve(file.getFileName()));
            }
        }
        return copy;
    }

    private static void editManifest(Path bundle, String regex, String replacement) throws IOException {
        Path manifest = bundle.resolve("manifest.json");
        String text = new String(Files.readAllBytes(manifest), StandardCharsets.UTF_8);
        String edited = text.replaceFirst(regex, replacement);
        assertTrue(!edited.equals(text), "the edit " + regex + " changed nothing");
        Files.write(manifest, edited.getBytes(StandardCharsets.UTF_8));
    }

    private static String problem(Path bundle) {
        return assertThrows(BundleException.class, () -> BundleDirectory.open(bundle)).problem();
    }

    @Test
    void opensAConvertedBundleAndReadsOnlyCheckedFiles() throws IOException {
        Path dir = bundle();
        BundleDirectory b = BundleDirectory.open(dir);
        assertEquals(dir.toRealPath(), b.root());
        assertArrayEquals(Files.readAllBytes(dir.resolve("vocab.txt")), b.read("vocab.txt"));
        assertEquals(dir.resolve("model.tflite").toRealPath(), b.verifiedFile("model.tflite"));
        Files.write(dir.resolve("extra.txt"), new byte[] {1});
        assertTrue(assertThrows(BundleException.class, () -> b.read("extra.txt")).problem()
                .startsWith("extra.txt is not listed in the manifest's files"));
        byte[] vocab = Files.readAllBytes(dir.resolve("vocab.txt"));
        vocab[10] ^= 1;
        Files.write(dir.resolve("vocab.txt"), vocab);
        assertEquals("vocab.txt is corrupt: its SHA-256 differs from the manifest's",
                assertThrows(BundleException.class, () -> b.read("vocab.txt")).problem());
        assertTrue(assertThrows(BundleException.class, () -> b.read("../outside/x")).problem()
                .contains("'../outside/x' is not a path inside the bundle"));
    }

    @Test
    void namesLeadingOutOfTheBundleAreRefused() throws IOException {
        Path dir = bundle();
        Files.copy(dir.resolve("model.tflite"), tmp.resolve("outside").resolve("evil.tflite"));
        editManifest(dir, "\"file\": \"model.tflite\"", "\"file\": \"../outside/evil.tflite\"");
        assertEquals("manifest.json: artifacts[0].file '../outside/evil.tflite' is not a path inside the bundle: "
                + "it has a '..' component", problem(dir));
        String absolute = tmp.resolve("outside").resolve("evil.tflite").toString();
        editManifest(dir, "\"file\": \"\\.\\./outside/evil\\.tflite\"", "\"file\": \"" + absolute + "\"");
        assertTrue(problem(dir).endsWith("is not a path inside the bundle: it is an absolute path"));
    }

    @Test
    void aModelSymlinkedOutsideTheBundleIsRefused() throws IOException {
        Path dir = bundle();
        Path outside = tmp.resolve("outside").resolve("model.tflite");
        Files.move(dir.resolve("model.tflite"), outside); // same bytes: the manifest's SHA-256 alone cannot tell
        Files.createSymbolicLink(dir.resolve("model.tflite"), outside);
        String problem = problem(dir);
        assertTrue(problem.startsWith("artifacts[0].file 'model.tflite' leads through a symbolic link to '"
                + outside.toRealPath() + "', outside the bundle"), problem);
    }

    @Test
    void aVocabularySymlinkedToEtcPasswdIsNeverRead() throws IOException {
        Path dir = bundle();
        Files.delete(dir.resolve("vocab.txt"));
        Files.createSymbolicLink(dir.resolve("vocab.txt"), Paths.get("/etc/passwd"));
        String problem = problem(dir);
        assertTrue(problem.startsWith("tokenizer.vocab_file 'vocab.txt' leads through a symbolic link to '/etc/passwd'"),
                problem);
    }

    @Test
    void aManifestSymlinkedOutsideIsRefused() throws IOException {
        Path dir = bundle();
        Path outside = tmp.resolve("outside").resolve("manifest.json");
        Files.move(dir.resolve("manifest.json"), outside);
        Files.createSymbolicLink(dir.resolve("manifest.json"), outside);
        assertTrue(problem(dir).startsWith("the manifest 'manifest.json' leads through a symbolic link"));
    }

    @Test
    void symlinksThatStayInsideAreAllowed() throws IOException {
        Path dir = bundle();
        Files.createDirectory(dir.resolve("store"));
        Files.move(dir.resolve("model.tflite"), dir.resolve("store").resolve("model.tflite"));
        Files.createSymbolicLink(dir.resolve("model.tflite"), Paths.get("store", "model.tflite"));
        Path latest = Files.createSymbolicLink(tmp.resolve("latest"), dir); // the bundle directory may be a link
        BundleDirectory b = BundleDirectory.open(latest);
        assertEquals(dir.resolve("store").resolve("model.tflite").toRealPath(), b.verifiedFile("model.tflite"));
    }

    @Test
    void aPinnedBundleOpensOnlyWhenItIsThePinnedOne() throws IOException {
        Path dir = bundle();
        String pin = TestFiles.sha256(dir.resolve("manifest.json"));
        assertEquals("ner", BundleDirectory.open(dir, pin).manifest().task());
        assertEquals("ner", BundleDirectory.open(dir, pin.toUpperCase(java.util.Locale.ROOT)).manifest().task());
        editManifest(dir, "\"created\": \"", "\"created\": \"edited ");
        BundleDirectory.open(dir); // unpinned it opens: the checksums alone only catch accidents
        BundleException e = assertThrows(BundleException.class, () -> BundleDirectory.open(dir, pin));
        assertTrue(e.problem().startsWith("the bundle is not the one pinned: its manifest.json has SHA-256 "
                + TestFiles.sha256(dir.resolve("manifest.json")) + ", the pin is " + pin), e.problem());
        IllegalArgumentException misuse = assertThrows(IllegalArgumentException.class,
                () -> BundleDirectory.open(dir, "abc"));
        assertTrue(misuse.getMessage().contains("64 hexadecimal digits"), misuse.getMessage());
    }

    @Test
    void aManifestThatDisagreesWithItsFilesIsRefusedPinnedOrNot() throws IOException {
        Path dir = bundle();
        String labels = new String(Files.readAllBytes(dir.resolve("labels.txt")), StandardCharsets.UTF_8);
        editManifest(dir, "\"B-PER\"", "\"B-PERSON\"");
        String pin = TestFiles.sha256(dir.resolve("manifest.json"));
        for (String expected : new String[] {null, pin}) {
            BundleException e = assertThrows(BundleException.class, () -> BundleDirectory.open(dir, expected));
            assertTrue(e.problem().startsWith("manifest.json: 'labels' [O, B-PERSON"), e.problem());
            assertTrue(e.problem().contains("disagree with labels.txt [" + String.join(", ", labels.split("\n"))),
                    e.problem());
            assertTrue(e.fix().startsWith("copy the bundle again"), e.fix());
        }
    }

    @Test
    void aSpecialTokenIdNamingAnotherLineOfTheVocabularyIsRefused() throws IOException {
        Path dir = bundle();
        editManifest(dir, "(?<head>\"cls\": \\{\\s*\"token\": \"\\[CLS\\]\",\\s*\"id\": )\\d+", "${head}1037");
        String problem = problem(dir);
        assertTrue(problem.startsWith("manifest.json: 'tokenizer.special_tokens.cls' is '[CLS]' with id 1037, but "
                + "line 1038 of vocab.txt is '"), problem);
    }

    @Test
    void aManifestGivingAKeyTwiceIsRefused() throws IOException {
        Path dir = bundle();
        editManifest(dir, "\"labels\": \\[", "\"labels\": [\"a\"], \"labels\": [");
        String problem = problem(dir);
        assertTrue(problem.startsWith("manifest.json is not valid JSON: the key \"labels\" appears twice"), problem);
    }

    @Test
    void aHostileSchemaVersionOrLengthIsRefused() throws IOException {
        Path dir = bundle();
        editManifest(dir, "\"max_sequence_length\": \\d+", "\"max_sequence_length\": 1000000000000");
        assertEquals("manifest.json: 'max_sequence_length' must be an integer from 2 to 65536, not 1000000000000",
                problem(dir));
        editManifest(dir, "\"schema_version\": 1", "\"schema_version\": -1");
        assertEquals("manifest.json: 'schema_version' must be a positive integer, not -1", problem(dir));
    }
}
