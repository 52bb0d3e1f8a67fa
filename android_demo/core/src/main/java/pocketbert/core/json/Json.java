package pocketbert.core.json;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader (RFC 8259) for the bundle manifest and the test fixtures; the core has
 * no third-party dependencies, so it cannot use a JSON library.
 *
 * <p>Values map to Java as: object → {@code Map<String, Object>} (insertion order, a repeated key
 * keeps its last value, as Python's {@code json} does), array → {@code List<Object>}, string →
 * {@code String}, integer → {@code Long} (or {@code BigInteger} beyond 64 bits), number with a
 * fraction or exponent → {@code Double}, {@code true}/{@code false} → {@code Boolean}, {@code null} →
 * {@code null}. Like Python's {@code json} module, which writes the manifests, it also reads
 * {@code NaN}, {@code Infinity} and {@code -Infinity}. Everything else is an error that names the
 * position: trailing text, leading zeros, raw control characters in strings, bad escapes, nesting
 * deeper than {@value #MAX_DEPTH}.
 */
public final class Json {
    /** Deeper nesting is refused instead of overflowing the stack. */
    public static final int MAX_DEPTH = 256;

    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /** The value of a JSON document; throws {@link JsonException} if it is not exactly one valid value. */
    public static Object parse(String text) {
        Json reader = new Json(text);
        reader.skipWhitespace();
        Object value = reader.value(0);
        reader.skipWhitespace();
        if (reader.pos != text.length()) {
            throw reader.error("unexpected text after the JSON value");
        }
        return value;
    }

    /** A JSON document that must be an object. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> parseObject(String text) {
        Object value = parse(text);
        if (!(value instanceof Map)) {
            throw new JsonException("expected a JSON object, got " + typeName(value), 0);
        }
        return (Map<String, Object>) value;
    }

    /** "object", "array", "string", "number", "boolean" or "null": for error messages. */
    public static String typeName(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Map) {
            return "object";
        }
        if (value instanceof List) {
            return "array";
        }
        if (value instanceof String) {
            return "string";
        }
        if (value instanceof Boolean) {
            return "boolean";
        }
        return "number";
    }

    private Object value(int depth) {
        if (pos >= text.length()) {
            throw error("unexpected end of the document");
        }
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            case 'N':
                return literal("NaN", Double.NaN);
            case 'I':
                return literal("Infinity", Double.POSITIVE_INFINITY);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character " + describe(c));
        }
    }

    private Map<String, Object> object(int depth) {
        checkDepth(depth);
        pos++; // '{'
        Map<String, Object> map = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            pos++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("expected a string key");
            }
            int keyStart = pos;
            String key = string();
            if (map.containsKey(key)) { // parsers differ on which value they keep: refuse, as the Python runtime
                pos = keyStart;
                throw error("the key \"" + key + "\" appears twice in one object");
            }
            skipWhitespace();
            expect(':');
            skipWhitespace();
            map.put(key, value(depth));
            skipWhitespace();
            char c = next("',' or '}'");
            if (c == '}') {
                return Collections.unmodifiableMap(map);
            }
            if (c != ',') {
                pos--;
                throw error("expected ',' or '}' in an object");
            }
        }
    }

    private List<Object> array(int depth) {
        checkDepth(depth);
        pos++; // '['
        List<Object> list = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            pos++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            skipWhitespace();
            list.add(value(depth));
            skipWhitespace();
            char c = next("',' or ']'");
            if (c == ']') {
                return Collections.unmodifiableList(list);
            }
            if (c != ',') {
                pos--;
                throw error("expected ',' or ']' in an array");
            }
        }
    }

    private String string() {
        pos++; // opening quote
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = next("a closing '\"'");
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                pos--;
                throw error("raw control character " + describe(c) + " in a string (it must be escaped)");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char e = next("an escape character");
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out.append(e);
                    break;
                case 'b':
                    out.append('\b');
                    break;
                case 'f':
                    out.append('\f');
                    break;
                case 'n':
                    out.append('\n');
                    break;
                case 'r':
                    out.append('\r');
                    break;
                case 't':
                    out.append('\t');
                    break;
                case 'u':
                    out.append(hex4());
                    break;
                default:
                    pos--;
                    throw error("invalid escape \\" + e);
            }
        }
    }

    private char hex4() {
        if (pos + 4 > text.length()) {
            throw error("truncated \\u escape");
        }
        int value = 0;
        for (int i = 0; i < 4; i++) {
            char c = text.charAt(pos);
            int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (digit < 0) {
                throw error("invalid hex digit " + describe(c) + " in a \\u escape");
            }
            value = value * 16 + digit;
            pos++;
        }
        return (char) value; // surrogate pairs arrive as two escapes and are joined by the StringBuilder
    }

    private Object number() {
        int start = pos;
        if (peek() == '-') {
            pos++;
            if (text.startsWith("Infinity", pos)) {
                pos += "Infinity".length();
                return Double.NEGATIVE_INFINITY;
            }
        }
        if (peek() == '0') {
            pos++;
            if (isDigit(peek())) {
                throw error("leading zeros are not allowed in numbers");
            }
        } else if (isDigit(peek())) {
            while (isDigit(peek())) {
                pos++;
            }
        } else {
            throw error("expected a digit");
        }
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            pos++;
            digits("a digit after the decimal point");
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') {
                pos++;
            }
            digits("a digit in the exponent");
        }
        String literal = text.substring(start, pos);
        if (!integral) {
            return Double.parseDouble(literal);
        }
        BigInteger big = new BigInteger(literal);
        return big.bitLength() < 64 ? (Object) big.longValue() : big;
    }

    private void digits(String what) {
        if (!isDigit(peek())) {
            throw error("expected " + what);
        }
        while (isDigit(peek())) {
            pos++;
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) {
            throw error("unexpected character " + describe(text.charAt(pos)));
        }
        pos += word.length();
        return value;
    }

    private void checkDepth(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH + " levels");
        }
    }

    private void skipWhitespace() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private char peek() {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private char next(String expected) {
        if (pos >= text.length()) {
            throw error("unexpected end of the document, expected " + expected);
        }
        return text.charAt(pos++);
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static String describe(char c) {
        return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    private JsonException error(String message) {
        return new JsonException(message, pos);
    }
}
