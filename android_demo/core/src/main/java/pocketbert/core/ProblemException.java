package pocketbert.core;

/**
 * An error that names the problem and its fix, like the Python runtime's {@code runtime.errors.Error};
 * the message is {@code problem}, then {@code "\n  fix: " + fix} when there is one.
 */
public abstract class ProblemException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String problem;
    private final String fix;

    protected ProblemException(String problem, String fix, Throwable cause) {
        super(message(problem, fix), cause);
        this.problem = problem;
        this.fix = fix;
    }

    /** The message every core exception carries (also {@link InputException}'s, which cannot extend this). */
    static String message(String problem, String fix) {
        return fix == null ? problem : problem + "\n  fix: " + fix;
    }

    public String problem() {
        return problem;
    }

    public String fix() {
        return fix;
    }
}
