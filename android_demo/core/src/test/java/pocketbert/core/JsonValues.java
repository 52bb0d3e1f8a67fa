package pocketbert.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Conversions from parsed JSON (Lists of Longs/Doubles) to the arrays the core takes, for tests. */
public final class JsonValues {
    private JsonValues() {
    }

    @SuppressWarnings("unchecked")
    public static List<Object> list(Object value) {
        return (List<Object>) value;
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> object(Object value) {
        return (Map<String, Object>) value;
    }

    public static int[] ints(Object value) {
        List<Object> list = list(value);
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) list.get(i)).intValue();
        }
        return out;
    }

    public static float[] floats(Object value) {
        List<Object> list = list(value);
        float[] out = new float[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) list.get(i)).floatValue();
        }
        return out;
    }

    public static float[][] matrix(Object value) {
        List<Object> rows = list(value);
        float[][] out = new float[rows.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = floats(rows.get(i));
        }
        return out;
    }

    public static List<String> strings(Object value) {
        List<String> out = new ArrayList<>();
        for (Object item : list(value)) {
            out.add((String) item);
        }
        return out;
    }

    /** {@code [[s, e], …]} → {@code {starts, ends}}. */
    public static int[][] spans(Object value) {
        List<Object> list = list(value);
        int[] starts = new int[list.size()];
        int[] ends = new int[list.size()];
        for (int i = 0; i < starts.length; i++) {
            int[] pair = ints(list.get(i));
            starts[i] = pair[0];
            ends[i] = pair[1];
        }
        return new int[][] {starts, ends};
    }

    /** A string with non-ASCII and control characters escaped, for failure messages. */
    public static String escape(String text) {
        StringBuilder out = new StringBuilder("\"");
        text.codePoints().forEach(cp -> {
            if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\') {
                out.appendCodePoint(cp);
            } else {
                out.append(cp > 0xffff ? String.format("\\U%08x", cp) : String.format("\\u%04x", cp));
            }
        });
        return out.append('"').toString();
    }

    /** A short label for a text in a test's display name. */
    public static String shortLabel(String text) {
        String escaped = escape(text);
        return escaped.length() > 40 ? escaped.substring(0, 40) + "…\"" : escaped;
    }
}
