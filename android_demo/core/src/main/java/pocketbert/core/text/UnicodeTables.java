package pocketbert.core.text;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The Unicode facts BERT's normaliser and pre-tokeniser depend on, exactly as the Python runtime's
 * tokenizer (Hugging Face {@code tokenizers}) has them: which code points {@code clean_text} removes,
 * what is whitespace, punctuation or a CJK ideograph, which marks {@code strip_accents} drops, the
 * canonical decompositions and combining classes of NFD, and the lower-case mappings.
 *
 * <p>They are read from {@code unicode-tables.txt}, which {@code tools/make_unicode_tables.py} probes
 * from the reference for every code point, rather than from {@link Character} or
 * {@link java.text.Normalizer}: the reference mixes several Unicode versions, and a phone's own
 * tables change with its Android version, so only fixed tables tokenize identically everywhere.
 */
final class UnicodeTables {
    static final String RESOURCE = "unicode-tables.txt";
    private static final int HANGUL_BASE = 0xAC00;
    private static final int HANGUL_COUNT = 11172;

    final CodePointRanges removed;
    final CodePointRanges whitespace;
    final CodePointRanges punctuation;
    final CodePointRanges chinese;
    final CodePointRanges nonspacingMark;
    private final CodePointRanges combiningClass;
    private final Map<Integer, int[]> decomposition;
    private final CodePointRanges lowercaseDelta; // value: delta; step kept in lowercaseStep
    private final int[] lowercaseStep;
    private final Map<Integer, int[]> lowercaseMulti;

    private UnicodeTables(Map<String, List<String>> sections) {
        removed = set(sections, "removed");
        whitespace = set(sections, "whitespace");
        punctuation = set(sections, "punctuation");
        chinese = set(sections, "chinese");
        nonspacingMark = set(sections, "nonspacing_mark");
        combiningClass = valued(section(sections, "combining_class"));
        decomposition = mappings(section(sections, "decomposition"));
        List<String> lower = section(sections, "lowercase");
        List<String> runs = new ArrayList<>();
        List<String> multi = new ArrayList<>();
        for (String line : lower) {
            (line.contains(":") ? multi : runs).add(line);
        }
        int[] lo = new int[runs.size()];
        int[] hi = new int[runs.size()];
        int[] delta = new int[runs.size()];
        lowercaseStep = new int[runs.size()];
        for (int i = 0; i < runs.size(); i++) { // "lo..hi/step delta"
            String[] parts = runs.get(i).split(" ");
            String[] rangeStep = parts[0].split("/");
            int[] range = range(rangeStep[0]);
            lo[i] = range[0];
            hi[i] = range[1];
            lowercaseStep[i] = Integer.parseInt(rangeStep[1]);
            delta[i] = Integer.parseInt(parts[1]);
        }
        lowercaseDelta = new CodePointRanges(lo, hi, delta);
        lowercaseMulti = mappings(multi);
    }

    /** The tables, read once from the class path. */
    static UnicodeTables get() {
        return Holder.INSTANCE;
    }

    private static final class Holder {
        static final UnicodeTables INSTANCE = load();
    }

    private static UnicodeTables load() {
        InputStream in = UnicodeTables.class.getResourceAsStream(RESOURCE);
        if (in == null) {
            throw new IllegalStateException(RESOURCE + " is missing from the class path: the core library was "
                    + "packaged without its resources");
        }
        Map<String, List<String>> sections = new HashMap<>();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            List<String> current = null;
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                if (line.startsWith("[")) {
                    current = new ArrayList<>();
                    sections.put(line.substring(1, line.length() - 1), current);
                } else if (current == null) {
                    throw new IllegalStateException(RESOURCE + ": entry before the first section: " + line);
                } else {
                    current.add(line);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
        return new UnicodeTables(sections);
    }

    /** NFD of one code point (Hangul syllables by the algorithm), or null if it does not decompose. */
    int[] decompose(int cp) {
        if (cp >= HANGUL_BASE && cp < HANGUL_BASE + HANGUL_COUNT) {
            int s = cp - HANGUL_BASE;
            int trail = 0x11A7 + s % 28;
            return trail == 0x11A7 ? new int[] {0x1100 + s / 588, 0x1161 + (s % 588) / 28}
                    : new int[] {0x1100 + s / 588, 0x1161 + (s % 588) / 28, trail};
        }
        return decomposition.get(cp);
    }

    /** Canonical combining class (0 for starters and for marks the reference does not know). */
    int combiningClass(int cp) {
        return combiningClass.valueOf(cp, 0);
    }

    /** Full lower-case mapping of one code point (usually itself, one code point). */
    int[] lowercase(int cp) {
        int i = lowercaseDelta.indexOf(cp);
        if (i >= 0 && (cp - lowercaseDelta.low(i)) % lowercaseStep[i] == 0) {
            return new int[] {cp + lowercaseDelta.value(i)};
        }
        int[] multi = lowercaseMulti.get(cp);
        return multi != null ? multi : new int[] {cp};
    }

    private static List<String> section(Map<String, List<String>> sections, String name) {
        List<String> lines = sections.get(name);
        if (lines == null) {
            throw new IllegalStateException(RESOURCE + " has no [" + name + "] section");
        }
        return lines;
    }

    private static CodePointRanges set(Map<String, List<String>> sections, String name) {
        List<String> lines = section(sections, name);
        int[] lo = new int[lines.size()];
        int[] hi = new int[lines.size()];
        for (int i = 0; i < lines.size(); i++) {
            int[] range = range(lines.get(i));
            lo[i] = range[0];
            hi[i] = range[1];
        }
        return new CodePointRanges(lo, hi, new int[lines.size()]);
    }

    private static CodePointRanges valued(List<String> lines) { // "lo..hi value"
        int[] lo = new int[lines.size()];
        int[] hi = new int[lines.size()];
        int[] values = new int[lines.size()];
        for (int i = 0; i < lines.size(); i++) {
            String[] parts = lines.get(i).split(" ");
            int[] range = range(parts[0]);
            lo[i] = range[0];
            hi[i] = range[1];
            values[i] = Integer.parseInt(parts[1]);
        }
        return new CodePointRanges(lo, hi, values);
    }

    private static Map<Integer, int[]> mappings(List<String> lines) { // "cp: a b c"
        Map<Integer, int[]> out = new HashMap<>(lines.size() * 2);
        for (String line : lines) {
            int colon = line.indexOf(':');
            int[] target = Arrays.stream(line.substring(colon + 1).trim().split(" "))
                    .mapToInt(h -> Integer.parseInt(h, 16)).toArray();
            out.put(Integer.parseInt(line.substring(0, colon), 16), target);
        }
        return Collections.unmodifiableMap(out);
    }

    private static int[] range(String text) { // "lo..hi" or "cp", hex
        int dots = text.indexOf("..");
        if (dots < 0) {
            int cp = Integer.parseInt(text, 16);
            return new int[] {cp, cp};
        }
        return new int[] {Integer.parseInt(text.substring(0, dots), 16), Integer.parseInt(text.substring(dots + 2), 16)};
    }
}
