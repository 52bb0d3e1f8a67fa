package pocketbert.core;

/**
 * The model does not fit the bundle: signatures, inputs or outputs other than the manifest says, a
 * vocabulary or label list of the wrong size, or a model that fails on the load-time probe. Carries
 * the problem and its fix, like the Python runtime's {@code ModelError}.
 */
public final class ModelException extends ProblemException {
    private static final long serialVersionUID = 1L;

    public ModelException(String problem, String fix) {
        this(problem, fix, null);
    }

    public ModelException(String problem, String fix, Throwable cause) {
        super(problem, fix, cause);
    }
}
