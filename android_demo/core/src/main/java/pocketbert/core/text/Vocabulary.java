package pocketbert.core.text;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import pocketbert.core.BundleException;

/**
 * A WordPiece vocabulary read from {@code vocab.txt}: line <i>n</i> (from 0) is token id <i>n</i>. Lines
 * end at {@code \n}, {@code \r\n} or {@code \r} and keep everything else, as Python's text mode reads
 * them (the runtime's {@code TextEncoder.from_vocab}); a token listed twice maps to its last line.
 */
public final class Vocabulary {
    private final List<String> tokens;
    private final Map<String, Integer> ids;
    private final int longestToken;

    private Vocabulary(List<String> tokens) {
        this.tokens = Collections.unmodifiableList(tokens);
        Map<String, Integer> ids = new HashMap<>(tokens.size() * 2);
        int longest = 0;
        for (int i = 0; i < tokens.size(); i++) {
            String token = tokens.get(i);
            ids.put(token, i);
            longest = Math.max(longest, token.codePointCount(0, token.length()));
        }
        this.ids = ids;
        this.longestToken = longest;
    }

    public static Vocabulary of(List<String> tokens) {
        return new Vocabulary(new ArrayList<>(tokens));
    }

    /** Reads {@code vocab.txt} (strict UTF-8); the stream is closed. */
    public static Vocabulary read(InputStream in) throws IOException {
        List<String> tokens = new ArrayList<>();
        InputStreamReader decoder = new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT));
        try (BufferedReader reader = new BufferedReader(decoder)) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                tokens.add(line);
            }
        } catch (CharacterCodingException e) {
            throw new BundleException("vocab.txt is not valid UTF-8 (line " + (tokens.size() + 1) + ")",
                    "copy the bundle again; the file is damaged", e);
        }
        return new Vocabulary(tokens);
    }

    /** Number of ids (lines). */
    public int size() {
        return tokens.size();
    }

    /** The id of {@code token}, or -1. */
    public int id(String token) {
        Integer id = ids.get(token);
        return id == null ? -1 : id;
    }

    public boolean contains(String token) {
        return ids.containsKey(token);
    }

    public String token(int id) {
        return tokens.get(id);
    }

    /** Length in code points of the longest token (continuation prefix included). */
    int longestToken() {
        return longestToken;
    }
}
