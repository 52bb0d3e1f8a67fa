package pocketbert.core.bundle;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import pocketbert.core.BundleException;

/**
 * The bundle boundary, as the Python runtime's {@code runtime/bundle_paths.py}: every file a manifest
 * names lies inside the bundle directory. A name is a relative path with {@code /} separators (not
 * absolute, no drive, no backslash, no empty, {@code .} or {@code ..} component), and after following
 * every symbolic link it must still lie inside the bundle directory's real path. Links that stay inside
 * are allowed; the bundle directory itself may be a link.
 */
public final class BundlePaths {
    static final String FIX = "every file a bundle names must lie inside the bundle directory: use the directory "
            + "written by `python -m converter … --out DIR` as it was written, with no names or symbolic links "
            + "leading out of it";

    private BundlePaths() {
    }

    /** {@code name} if it is a plain relative path; otherwise a BundleException naming {@code entry}. */
    public static String checkName(String name, String entry) {
        String reason = null;
        if (name.isEmpty()) {
            reason = "empty";
        } else if (name.indexOf('\0') >= 0) {
            reason = "it contains a NUL character";
        } else if (name.startsWith("/") || name.matches("^[A-Za-z]:.*")) {
            reason = "it is an absolute path";
        } else if (name.indexOf('\\') >= 0) {
            reason = "it contains a backslash (bundle paths use /)";
        } else {
            for (String part : name.split("/", -1)) {
                if (part.equals("..")) {
                    reason = "it has a '..' component";
                    break;
                }
                if (part.isEmpty() || part.equals(".")) {
                    reason = "it has an empty or '.' component";
                }
            }
        }
        if (reason != null) {
            throw new BundleException("manifest.json: " + entry + " '" + name + "' is not a path inside the bundle: "
                    + reason, FIX);
        }
        return name;
    }

    /**
     * The real path of bundle file {@code name} (symbolic links followed), which must lie inside
     * {@code root}, the bundle directory's real path. The file need not exist: the caller reports a
     * missing file, knowing whether it needs it.
     */
    public static Path resolveInside(Path root, String name, String entry) {
        checkName(name, entry);
        Path candidate = root.resolve(name);
        Path existing = candidate;
        while (!Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) { // missing: judge its deepest existing ancestor
            existing = existing.getParent();
        }
        Path real;
        try {
            real = existing.toRealPath().resolve(existing.relativize(candidate)).normalize();
        } catch (NoSuchFileException e) {
            throw new BundleException(entry + " '" + name + "' is a symbolic link to a missing file", FIX, e);
        } catch (IOException e) {
            throw new BundleException(entry + " '" + name + "' cannot be resolved: " + e, FIX, e);
        }
        if (real.equals(root) || !real.startsWith(root)) {
            throw new BundleException(entry + " '" + name + "' leads through a symbolic link to '" + real
                    + "', outside the bundle '" + root + "'", FIX);
        }
        return real;
    }
}
