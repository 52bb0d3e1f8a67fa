package pocketbert.core;

/**
 * The bundle cannot be used: a missing or corrupt file, a manifest from a newer schema, a field the
 * reader relies on missing or mistyped, no artifact this app can run. Carries the problem and its fix,
 * like the Python runtime's {@code BundleError}.
 */
public final class BundleException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String problem;
    private final String fix;

    public BundleException(String problem, String fix) {
        this(problem, fix, null);
    }

    public BundleException(String problem, String fix, Throwable cause) {
        super(fix == null ? problem : problem + "\n  fix: " + fix, cause);
        this.problem = problem;
        this.fix = fix;
    }

    public String problem() {
        return problem;
    }

    public String fix() {
        return fix;
    }
}
