package pocketbert.core;

/**
 * The bundle cannot be used: a missing or corrupt file, a manifest from a newer schema, a field the
 * reader relies on missing or mistyped, no artifact this app can run. Carries the problem and its fix,
 * like the Python runtime's {@code BundleError}.
 */
public final class BundleException extends ProblemException {
    private static final long serialVersionUID = 1L;

    public BundleException(String problem, String fix) {
        this(problem, fix, null);
    }

    public BundleException(String problem, String fix, Throwable cause) {
        super(problem, fix, cause);
    }
}
