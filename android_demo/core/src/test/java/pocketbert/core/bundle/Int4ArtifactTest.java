package pocketbert.core.bundle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import pocketbert.core.BundleException;
import pocketbert.core.TestFiles;

/**
 * The phone-sized int4 TFLite file (tflite:int4-dynamic), from a bundle converted at test time with int8 and
 * int4 and from its phone cut keeping int4 (make_pipeline_cases.py): the core ranks it after int8, picks it
 * where it is the file present or the precision asked for, and checks its size and SHA-256 like any model.
 */
class Int4ArtifactTest {
    private static final String INT4 = "model.int4-dynamic.tflite";
    private static final Path FULL = TestFiles.path("pipeline").resolve("cls-bundle");
    private static final Path PHONE = TestFiles.path("pipeline").resolve("cls-int4-phone");

    @TempDir
    Path tmp;

    private static Manifest manifest(Path bundle) {
        return Manifest.parse(TestFiles.read(bundle.resolve("manifest.json")));
    }

    private static Set<String> present(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).collect(Collectors.toSet());
        }
    }

    /** What BundleLoader.kt does with the app's assets: choose among the files present, then verify. */
    private static Artifact loadLikeTheApp(Path dir) throws IOException {
        Manifest m = manifest(dir);
        Artifact artifact = m.chooseArtifact("tflite", present(dir), null);
        for (String file : new String[] {m.tokenizer().vocabFile(), "labels.txt", artifact.file()}) {
            try (InputStream in = Files.newInputStream(dir.resolve(file))) {
                Integrity.verify(m, file, in);
            }
        }
        return artifact;
    }

    @Test
    void aConvertedInt4ArtifactRanksAfterInt8AndIsChosenWhenAskedOrAlone() throws IOException {
        Manifest m = manifest(FULL);
        assertEquals(Arrays.asList("tflite:fp32", "tflite:int8-dynamic", "tflite:int4-dynamic"),
                m.artifacts().stream().map(Artifact::recipe).collect(Collectors.toList()));
        Artifact int4 = m.artifacts().get(2);
        assertTrue(int4.passed());
        assertEquals("int4-dynamic", int4.precision());
        assertEquals(INT4, int4.file());
        assertEquals(Arrays.asList("seq_16", "seq_32"), int4.signatures());
        Set<String> all = present(FULL);
        assertEquals("tflite:int8-dynamic", m.chooseArtifact("tflite", all, null).recipe());
        assertEquals(int4, m.chooseArtifact("tflite", all, "int4-dynamic"));
        assertEquals(int4, m.chooseArtifact("tflite", new HashSet<>(Arrays.asList("model.tflite", INT4)), null));
        // it is the phone-sized file: smaller than int8's, and both are listed with their real sizes
        long int4Bytes = Files.size(FULL.resolve(INT4));
        assertEquals(int4Bytes, m.files().get(INT4).bytes());
        assertTrue(int4Bytes < Files.size(FULL.resolve("model.int8-dynamic.tflite")), int4Bytes + " bytes");
        assertEquals(FULL.resolve(INT4).toRealPath(), BundleDirectory.open(FULL).verifiedFile(INT4));
    }

    @Test
    void thePhoneCutIsLoadedWithItsInt4FileVerified() throws IOException {
        // tokenizer.json stays in every cut (docs/converter.md); the app reads vocab.txt
        assertEquals(new HashSet<>(Arrays.asList("manifest.json", "vocab.txt", "labels.txt", "tokenizer.json", INT4)),
                present(PHONE));
        Manifest cut = manifest(PHONE);
        assertEquals(Arrays.asList("tflite:int4-dynamic"),
                cut.artifacts().stream().map(Artifact::recipe).collect(Collectors.toList()));
        assertEquals("tflite:int4-dynamic", loadLikeTheApp(PHONE).recipe());
        // the cut lists the very file the full bundle verified
        FileEntry full = manifest(FULL).files().get(INT4);
        assertEquals(full.sha256(), cut.files().get(INT4).sha256());
        assertEquals(full.sha256(), TestFiles.sha256(PHONE.resolve(INT4)));
        assertEquals(PHONE.resolve(INT4).toRealPath(), BundleDirectory.open(PHONE).verifiedFile(INT4));
    }

    @Test
    void aDamagedOrTruncatedInt4FileIsRefused() throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("phone"));
        for (String name : present(PHONE)) {
            Files.copy(PHONE.resolve(name), dir.resolve(name));
        }
        byte[] model = Files.readAllBytes(dir.resolve(INT4));
        model[model.length / 2] ^= 1;
        Files.write(dir.resolve(INT4), model);
        assertEquals(INT4 + " is corrupt: its SHA-256 differs from the manifest's",
                assertThrows(BundleException.class, () -> loadLikeTheApp(dir)).problem());
        assertEquals(INT4 + " is corrupt: its SHA-256 differs from the manifest's",
                assertThrows(BundleException.class, () -> BundleDirectory.open(dir).verifiedFile(INT4)).problem());
        Files.write(dir.resolve(INT4), Arrays.copyOf(model, 1000));
        assertEquals(INT4 + " is corrupt or truncated: 1000 bytes, the manifest says " + model.length,
                assertThrows(BundleException.class, () -> loadLikeTheApp(dir)).problem());
    }
}
