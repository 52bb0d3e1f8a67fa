package pocketbert.core.text;

/** One of the manifest's special tokens ({@code unk}, {@code cls}, {@code sep}, {@code pad}, {@code mask}). */
public final class SpecialToken {
    private final String token;
    private final int id;

    public SpecialToken(String token, int id) {
        if (token == null || token.isEmpty()) {
            throw new IllegalArgumentException("a special token needs a non-empty string");
        }
        this.token = token;
        this.id = id;
    }

    public String token() {
        return token;
    }

    public int id() {
        return id;
    }

    @Override
    public String toString() {
        return token + "=" + id;
    }
}
