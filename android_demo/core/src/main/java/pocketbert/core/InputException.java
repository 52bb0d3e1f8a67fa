package pocketbert.core;

/**
 * A text or an option the pipeline cannot process (a lone surrogate, a stride that does not fit the
 * window, an unknown aggregation). An {@link IllegalArgumentException}, like the Python runtime's
 * {@code InputError} is a {@code ValueError}.
 */
public final class InputException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String problem;
    private final String fix;

    public InputException(String problem, String fix) {
        super(ProblemException.message(problem, fix));
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
