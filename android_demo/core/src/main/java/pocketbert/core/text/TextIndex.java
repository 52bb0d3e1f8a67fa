package pocketbert.core.text;

import pocketbert.core.InputException;

/**
 * A Java string as code points, with the UTF-16 index of each: offsets are computed in code points
 * (what Python's {@code str} and the golden vectors count) and converted for Java/Kotlin strings.
 */
public final class TextIndex {
    private final String text;
    private final int[] codePoints;
    private final int[] utf16; // utf16[i]: UTF-16 index of code point i; utf16[n] = text.length()

    private TextIndex(String text) {
        this.text = text;
        int n = text.codePointCount(0, text.length());
        codePoints = new int[n];
        utf16 = new int[n + 1];
        int unit = 0;
        for (int i = 0; i < n; i++) {
            int cp = text.codePointAt(unit);
            codePoints[i] = cp;
            utf16[i] = unit;
            unit += Character.charCount(cp);
        }
        utf16[n] = unit;
    }

    /**
     * Index of {@code text}; a lone surrogate is refused as the Python runtime refuses it (it is not
     * Unicode text, and UTF-8 cannot encode it).
     */
    public static TextIndex of(String text) {
        if (text == null) {
            throw new InputException("no text: got null", "pass a string (\"\" for an empty text)");
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InputException(String.format("the text contains a lone surrogate U+%04X at UTF-16 index %d: "
                        + "it is not valid Unicode text", (int) c, i),
                        "decode the source bytes with replacement (or fix the text) before passing it");
            }
        }
        return new TextIndex(text);
    }

    public String text() {
        return text;
    }

    int[] codePoints() {
        return codePoints;
    }

    /** Length in code points. */
    public int length() {
        return codePoints.length;
    }

    /** UTF-16 index of code point index {@code cp} (0 ≤ cp ≤ length). */
    public int utf16(int cp) {
        return utf16[cp];
    }

    /** {@code text[start, end)} in code points, as Python slices it. */
    public String slice(int start, int end) {
        return text.substring(utf16[start], utf16[end]);
    }
}
