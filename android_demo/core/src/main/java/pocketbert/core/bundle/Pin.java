package pocketbert.core.bundle;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;
import pocketbert.core.BundleException;

/**
 * A bundle pinned by the SHA-256 of its {@code manifest.json} bytes (printed by the converter). The
 * manifest lists every file's size and SHA-256, so pinning it pins every file read through
 * {@link Integrity}; without a pin the checksums only catch accidents, since nothing covers the manifest.
 */
public final class Pin {
    private Pin() {
    }

    /**
     * {@code expected} as 64 lower-case hex digits, or null for no pin. A malformed pin is a programming
     * error ({@link IllegalArgumentException}), as the Python runtime's {@code ValueError}.
     */
    public static String parse(String expected) {
        if (expected == null) {
            return null;
        }
        String pin = expected.trim().toLowerCase(Locale.ROOT);
        if (!pin.matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("expected SHA-256 must be 64 hexadecimal digits (the SHA-256 of the "
                    + "bundle's manifest.json), not '" + expected + "'");
        }
        return pin;
    }

    /** Throws unless {@code manifestBytes} have the SHA-256 {@code expected} (null: no pin, nothing checked). */
    public static void check(byte[] manifestBytes, String expected) {
        String pin = parse(expected);
        if (pin == null) {
            return;
        }
        String actual = sha256Hex(manifestBytes);
        if (!actual.equals(pin)) {
            throw new BundleException("the bundle is not the one pinned: its manifest.json has SHA-256 " + actual
                    + ", the pin is " + pin, "use the bundle the pin was made for (copy it again from its source); "
                    + "if it was rebuilt on purpose, pin the SHA-256 the converter printed for the new one");
        }
    }

    static String sha256Hex(byte[] data) {
        return hex(digest().digest(data));
    }

    static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    static String hex(byte[] bytes) {
        StringBuilder hex = new StringBuilder();
        for (byte b : bytes) {
            hex.append(String.format("%02x", b & 0xff));
        }
        return hex.toString();
    }
}
