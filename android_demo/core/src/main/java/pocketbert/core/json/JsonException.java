package pocketbert.core.json;

/** Malformed JSON: what is wrong and the character offset where the reader stopped. */
public final class JsonException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final int offset;

    public JsonException(String message, int offset) {
        super(message + " (at character " + offset + ")");
        this.offset = offset;
    }

    /** Offset (in UTF-16 units) into the document. */
    public int offset() {
        return offset;
    }
}
