package pocketbert.core.bundle;

/** A {@code files} entry of the manifest: a bundle file's size and SHA-256. */
public final class FileEntry {
    private final long bytes;
    private final String sha256;

    FileEntry(long bytes, String sha256) {
        this.bytes = bytes;
        this.sha256 = sha256;
    }

    public long bytes() {
        return bytes;
    }

    /** 64 lower-case hex digits. */
    public String sha256() {
        return sha256;
    }
}
