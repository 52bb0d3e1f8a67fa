package pocketbert.core.bundle;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import pocketbert.core.BundleException;

/** Checks a bundle file against the manifest's {@code files} entry (size and SHA-256), as the runtime's {@code verify}. */
public final class Integrity {
    private Integrity() {
    }

    /** Reads {@code data} to the end (it is not closed) and throws if it is not the file the manifest lists. */
    public static void verify(Manifest manifest, String name, InputStream data) throws IOException {
        FileEntry entry = manifest.files().get(name);
        if (entry == null) {
            throw new BundleException(name + " is not listed in the manifest's files, so it cannot be checked",
                    "convert the model again with this version of pocketbert");
        }
        MessageDigest sha256;
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
        byte[] buffer = new byte[1 << 16];
        long size = 0;
        for (int n = data.read(buffer); n >= 0; n = data.read(buffer)) {
            sha256.update(buffer, 0, n);
            size += n;
        }
        if (size != entry.bytes()) {
            throw new BundleException(name + " is corrupt or truncated: " + size + " bytes, the manifest says "
                    + entry.bytes(), "copy the bundle again (an interrupted copy leaves short files)");
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha256.digest()) {
            hex.append(String.format("%02x", b & 0xff));
        }
        if (!hex.toString().equals(entry.sha256())) {
            throw new BundleException(name + " is corrupt: its SHA-256 differs from the manifest's",
                    "copy the bundle again; if you changed the file on purpose, convert again");
        }
    }
}
