package pocketbert.core.bundle;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import pocketbert.core.BundleException;

/**
 * A bundle directory on the device's storage (downloaded or copied there), read as the Python runtime
 * reads one: {@code manifest.json}, optionally pinned by its SHA-256 ({@link Pin}), then only files the
 * manifest lists, each inside the directory ({@link BundlePaths}: no {@code ..}, absolute names or
 * symbolic links leading out) and checked against its size and SHA-256 before use. Every name the
 * manifest holds is checked when the bundle is opened, used or not, and the manifest must agree with the
 * bundle's files ({@link Consistency}).
 */
public final class BundleDirectory {
    public static final String MANIFEST = "manifest.json";
    /** A manifest is a few kilobytes; reading a larger file whole would let a hostile bundle exhaust memory. */
    static final long MAX_MANIFEST_BYTES = 16L << 20;
    private static final String GIVE_A_BUNDLE = "give the directory written by `python -m converter … --out DIR`";

    private final Path root;
    private final Manifest manifest;

    private BundleDirectory(Path root, Manifest manifest) {
        this.root = root;
        this.manifest = manifest;
    }

    /** Opens and checks the bundle in {@code dir}, unpinned: its checksums then catch accidents only. */
    public static BundleDirectory open(Path dir) {
        return open(dir, null);
    }

    /**
     * Opens and checks the bundle in {@code dir}; with {@code expectedSha256} (64 hex digits), refuses it
     * unless its manifest.json has that SHA-256, which pins every file read through this class.
     */
    public static BundleDirectory open(Path dir, String expectedSha256) {
        String pin = Pin.parse(expectedSha256);
        if (!Files.isDirectory(dir)) {
            throw new BundleException("bundle '" + dir + "' " + (Files.exists(dir) ? "is not a directory" : "does not exist"),
                    GIVE_A_BUNDLE);
        }
        if (!Files.isRegularFile(dir.resolve(MANIFEST))) {
            throw new BundleException("'" + dir + "' has no manifest.json, so it is not a PocketBERT bundle", GIVE_A_BUNDLE);
        }
        try {
            Path root = dir.toRealPath();
            Path manifestPath = BundlePaths.resolveInside(root, MANIFEST, "the manifest");
            long size = Files.size(manifestPath);
            if (size > MAX_MANIFEST_BYTES) {
                throw new BundleException("manifest.json is " + size + " bytes; a bundle's manifest is a few kilobytes "
                        + "(at most " + MAX_MANIFEST_BYTES + ")", "copy the bundle again; the manifest is damaged");
            }
            Manifest manifest = Manifest.parse(Files.readAllBytes(manifestPath), pin);
            for (Map.Entry<String, String> named : manifest.namedFiles()) {
                BundlePaths.resolveInside(root, named.getValue(), named.getKey());
            }
            BundleDirectory bundle = new BundleDirectory(root, manifest);
            Consistency.check(manifest, bundle::readIfHeld);
            return bundle;
        } catch (IOException e) {
            throw unreadable(dir.toString(), e);
        }
    }

    /** The bundle directory's real path. */
    public Path root() {
        return root;
    }

    public Manifest manifest() {
        return manifest;
    }

    /**
     * The real path of bundle file {@code name}, checked: inside the bundle, listed in the manifest's
     * {@code files}, present, with the listed size and SHA-256. For files used by path (the model,
     * memory-mapped); {@link #read} for files used as bytes.
     */
    public Path verifiedFile(String name) {
        Path path = listedFile(name);
        try (InputStream in = Files.newInputStream(path)) {
            Integrity.verify(manifest, name, in);
        } catch (IOException e) {
            throw unreadable(name, e);
        }
        return path;
    }

    /** The bytes of bundle file {@code name}, checked as {@link #verifiedFile}: the bytes checked are the bytes returned. */
    public byte[] read(String name) {
        Path path = listedFile(name);
        byte[] data;
        try {
            data = Files.readAllBytes(path);
            Integrity.verify(manifest, name, new ByteArrayInputStream(data));
        } catch (IOException e) {
            throw unreadable(name, e);
        }
        return data;
    }

    /** {@link #read}, or null when the bundle does not hold {@code name} (not listed, or absent). */
    byte[] readIfHeld(String name) {
        if (!manifest.files().containsKey(name) || !Files.isRegularFile(BundlePaths.resolveInside(root, name, "file"))) {
            return null;
        }
        return read(name);
    }

    private Path listedFile(String name) {
        Path path = BundlePaths.resolveInside(root, name, "file");
        if (!manifest.files().containsKey(name)) {
            throw new BundleException(name + " is not listed in the manifest's files, so it cannot be checked",
                    "convert the model again with this version of pocketbert");
        }
        if (!Files.isRegularFile(path)) {
            throw new BundleException("the bundle is missing " + name + " (listed in its manifest)",
                    "copy the complete bundle directory again; " + name + " must sit beside manifest.json");
        }
        return path;
    }

    private static BundleException unreadable(String what, IOException e) {
        return new BundleException("cannot read " + what + ": " + e, "check that the app may read the bundle directory, "
                + "or copy the bundle again", e);
    }
}
