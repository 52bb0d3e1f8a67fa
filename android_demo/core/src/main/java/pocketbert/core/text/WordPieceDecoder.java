package pocketbert.core.text;

import java.util.List;

/**
 * Tokens back to text, as {@code tokenizers}' WordPiece decoder with {@code cleanup} (what
 * Hugging Face's token-classification pipeline uses for an entity's {@code word}): continuation pieces
 * lose their prefix and are glued on, other tokens get a space before them, and each piece is cleaned
 * of tokenization artifacts such as the space before {@code .} or {@code n't}.
 */
public final class WordPieceDecoder {
    private static final String[][] CLEANUP = {
            {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
            {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    private final String prefix;

    public WordPieceDecoder(String prefix) {
        this.prefix = prefix;
    }

    public String decode(List<String> tokens) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < tokens.size(); i++) {
            String token = tokens.get(i);
            if (i != 0) {
                token = token.startsWith(prefix) ? token.substring(prefix.length()) : " " + token;
            }
            for (String[] rule : CLEANUP) {
                token = token.replace(rule[0], rule[1]);
            }
            out.append(token);
        }
        return out.toString();
    }
}
