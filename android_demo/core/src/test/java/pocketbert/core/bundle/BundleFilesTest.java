package pocketbert.core.bundle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import pocketbert.core.BundleException;
import pocketbert.core.TestFiles;
import pocketbert.core.text.Vocabulary;

/** Integrity (size and SHA-256 against the manifest), labels.txt and vocab.txt of a converted bundle. */
class BundleFilesTest {
    private static final Path BUNDLE = TestFiles.path("pipeline").resolve("ner-bundle");

    private static Manifest manifest() {
        return Manifest.parse(TestFiles.read(BUNDLE.resolve("manifest.json")));
    }

    @Test
    void everyListedFileOfAConvertedBundlePassesItsCheck() throws IOException {
        Manifest m = manifest();
        for (String name : m.files().keySet()) {
            try (InputStream in = Files.newInputStream(BUNDLE.resolve(name))) {
                Integrity.verify(m, name, in);
            }
        }
    }

    @Test
    void aChangedTruncatedOrUnlistedFileIsRefused() throws IOException {
        Manifest m = manifest();
        byte[] vocab = Files.readAllBytes(BUNDLE.resolve("vocab.txt"));
        byte[] changed = vocab.clone();
        changed[10] ^= 1;
        BundleException e = assertThrows(BundleException.class,
                () -> Integrity.verify(m, "vocab.txt", new ByteArrayInputStream(changed)));
        assertEquals("vocab.txt is corrupt: its SHA-256 differs from the manifest's", e.problem());
        e = assertThrows(BundleException.class,
                () -> Integrity.verify(m, "vocab.txt", new ByteArrayInputStream(Arrays.copyOf(vocab, 100))));
        assertEquals("vocab.txt is corrupt or truncated: 100 bytes, the manifest says " + vocab.length, e.problem());
        e = assertThrows(BundleException.class,
                () -> Integrity.verify(m, "manifest.json", new ByteArrayInputStream(new byte[0])));
        assertTrue(e.problem().startsWith("manifest.json is not listed"), e.problem());
    }

    @Test
    void labelsTxtMustBeTheManifestsLabels() throws IOException {
        Manifest m = manifest();
        List<String> labels;
        try (InputStream in = Files.newInputStream(BUNDLE.resolve("labels.txt"))) {
            labels = Labels.read(in);
        }
        assertEquals(m.labels(), labels);
        Labels.requireSame(labels, m);
        BundleException e = assertThrows(BundleException.class,
                () -> Labels.requireSame(Arrays.asList("O", "B-PER"), m));
        assertTrue(e.problem().startsWith("labels.txt lists [O, B-PER] but the manifest says [O, B-PER, I-PER"));
        e = assertThrows(BundleException.class,
                () -> Labels.read(new ByteArrayInputStream("O\nB-PER".getBytes(StandardCharsets.UTF_8))));
        assertTrue(e.problem().contains("last line has no newline"), e.problem());
        e = assertThrows(BundleException.class, () -> Labels.read(new ByteArrayInputStream(new byte[] {'O', (byte) 0xff, '\n'})));
        assertEquals("labels.txt is not valid UTF-8", e.problem());
    }

    @Test
    void vocabTxtLinesAreIdsAsPythonReadsThem() throws IOException {
        Vocabulary v = Vocabulary.read(new ByteArrayInputStream("[PAD]\r\nb\rc\n\nd".getBytes(StandardCharsets.UTF_8)));
        assertEquals(5, v.size());
        assertEquals(Arrays.asList("[PAD]", "b", "c", "", "d"),
                Arrays.asList(v.token(0), v.token(1), v.token(2), v.token(3), v.token(4)));
        assertEquals(4, v.id("d"));
        assertEquals(-1, v.id("e"));
        Vocabulary twice = Vocabulary.of(Arrays.asList("a", "b", "a"));
        assertEquals(2, twice.id("a"), "a token listed twice maps to its last line, as in Python's dict");
        BundleException e = assertThrows(BundleException.class,
                () -> Vocabulary.read(new ByteArrayInputStream(new byte[] {'a', '\n', (byte) 0xc3})));
        assertTrue(e.problem().startsWith("vocab.txt is not valid UTF-8"), e.problem());
        try (InputStream in = Files.newInputStream(BUNDLE.resolve("vocab.txt"))) {
            assertEquals(30522, Vocabulary.read(in).size());
        }
    }
}
