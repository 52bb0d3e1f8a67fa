package pocketbert.core.bundle;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import pocketbert.core.BundleException;

/** {@code labels.txt}: one label per line (UTF-8, each line ends with a newline); line i is logit i. */
public final class Labels {
    private Labels() {
    }

    /** Reads {@code labels.txt} (the stream is read to the end, not closed). */
    public static List<String> read(InputStream in) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        byte[] buffer = new byte[4096];
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
            bytes.write(buffer, 0, n);
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes.toByteArray())).toString();
        } catch (CharacterCodingException e) {
            throw new BundleException("labels.txt is not valid UTF-8", "copy the bundle again; the file is damaged", e);
        }
        if (text.isEmpty() || !text.endsWith("\n")) {
            throw new BundleException("labels.txt is empty or its last line has no newline",
                    "copy the bundle again; the file is truncated");
        }
        return Arrays.asList(text.substring(0, text.length() - 1).split("\n", -1));
    }

    /** labels.txt and the manifest must list the same labels in the same order. */
    public static void requireSame(List<String> fromFile, Manifest manifest) {
        if (!fromFile.equals(manifest.labels())) {
            throw new BundleException("labels.txt lists " + fromFile + " but the manifest says " + manifest.labels(),
                    "copy labels.txt and manifest.json from the same bundle");
        }
    }
}
