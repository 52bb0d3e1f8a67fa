package pocketbert.core.text;

/**
 * BERT's normaliser, step for step as Hugging Face {@code tokenizers}' {@code BertNormalizer} (the
 * Python runtime's tokenizer): clean text (drop control/format/private-use characters, U+0000 and
 * U+FFFD; whitespace becomes a space), space out CJK ideographs, strip accents (NFD, then drop
 * non-spacing marks), lower-case (full mapping, one code point at a time). Each step is optional, as
 * the manifest's tokenizer settings say; every step keeps each code point's span in the original text.
 */
final class BertNormalizer {
    private final boolean cleanText;
    private final boolean chineseChars;
    private final boolean stripAccents;
    private final boolean lowercase;
    private final UnicodeTables tables;

    BertNormalizer(boolean cleanText, boolean chineseChars, boolean stripAccents, boolean lowercase,
                   UnicodeTables tables) {
        this.cleanText = cleanText;
        this.chineseChars = chineseChars;
        this.stripAccents = stripAccents;
        this.lowercase = lowercase;
        this.tables = tables;
    }

    AlignedText normalize(AlignedText text) {
        if (cleanText) {
            text = clean(text);
        }
        if (chineseChars) {
            text = spaceChinese(text);
        }
        if (stripAccents) {
            text = withoutNonspacingMarks(CanonicalDecomposition.apply(text, tables));
        }
        if (lowercase) {
            text = lowercase(text);
        }
        return text;
    }

    private AlignedText clean(AlignedText text) {
        AlignedText.Builder out = text.edit();
        for (int i = 0; i < text.length; i++) {
            int cp = text.codePoints[i];
            if (tables.removed.contains(cp)) {
                out.remove(1);
            } else {
                out.replace(tables.whitespace.contains(cp) ? ' ' : cp);
            }
        }
        return out.build();
    }

    private AlignedText spaceChinese(AlignedText text) {
        AlignedText.Builder out = text.edit();
        for (int i = 0; i < text.length; i++) {
            int cp = text.codePoints[i];
            if (tables.chinese.contains(cp)) {
                out.insert(' ');
                out.replace(cp);
                out.insert(' ');
            } else {
                out.replace(cp);
            }
        }
        return out.build();
    }

    private AlignedText withoutNonspacingMarks(AlignedText text) {
        AlignedText.Builder out = text.edit();
        for (int i = 0; i < text.length; i++) {
            int cp = text.codePoints[i];
            if (tables.nonspacingMark.contains(cp)) {
                out.remove(1);
            } else {
                out.replace(cp);
            }
        }
        return out.build();
    }

    private AlignedText lowercase(AlignedText text) {
        AlignedText.Builder out = text.edit();
        for (int i = 0; i < text.length; i++) {
            int[] lower = tables.lowercase(text.codePoints[i]);
            out.replace(lower[0]);
            for (int j = 1; j < lower.length; j++) {
                out.insert(lower[j]);
            }
        }
        return out.build();
    }
}
