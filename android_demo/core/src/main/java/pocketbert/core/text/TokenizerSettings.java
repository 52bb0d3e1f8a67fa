package pocketbert.core.text;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import pocketbert.core.BundleException;
import pocketbert.core.bundle.Fields;

/**
 * The manifest's {@code tokenizer} object (docs/manifest.md): everything needed to rebuild the
 * bundle's WordPiece tokenizer from {@code vocab.txt}. Missing optional fields take the defaults of
 * the Python runtime's {@code TextEncoder.from_vocab}; {@code strip_accents: null} follows
 * lower-casing, BERT's rule for an unset value.
 */
public final class TokenizerSettings {
    private final String vocabFile;
    private final Integer vocabSize;
    private final boolean lowercase;
    private final boolean stripAccents;
    private final boolean cleanText;
    private final boolean chineseChars;
    private final String continuingSubwordPrefix;
    private final int maxInputCharsPerWord;
    private final Map<String, SpecialToken> specialTokens;

    private TokenizerSettings(Builder b) {
        this.vocabFile = b.vocabFile;
        this.vocabSize = b.vocabSize;
        this.lowercase = b.lowercase;
        this.stripAccents = b.stripAccents == null ? b.lowercase : b.stripAccents;
        this.cleanText = b.cleanText;
        this.chineseChars = b.chineseChars;
        this.continuingSubwordPrefix = b.continuingSubwordPrefix;
        this.maxInputCharsPerWord = b.maxInputCharsPerWord;
        this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(b.specialTokens));
        for (String required : new String[] {"unk", "cls", "sep"}) {
            if (!specialTokens.containsKey(required)) {
                throw new BundleException("the tokenizer settings have no '" + required + "' special token",
                        "convert the model again; BERT tokenizers need [UNK], [CLS] and [SEP]");
            }
        }
    }

    /** From the manifest's {@code tokenizer} object ({@code where} names it in error messages). */
    public static TokenizerSettings fromJson(Map<String, Object> json, String where) {
        Fields f = new Fields(json, where);
        String type = f.optionalString("type", "wordpiece");
        if (!type.equals("wordpiece")) {
            throw new BundleException(where + ": tokenizer type '" + type + "' is not WordPiece, and vocab.txt "
                    + "alone describes only a WordPiece tokenizer", "convert a BERT-family model");
        }
        Builder b = new Builder()
                .vocabFile(f.optionalString("vocab_file", "vocab.txt"))
                .lowercase(f.requiredBoolean("do_lower_case"))
                .stripAccents(f.nullableBoolean("strip_accents"))
                .cleanText(f.optionalBoolean("clean_text", true))
                .chineseChars(f.optionalBoolean("tokenize_chinese_chars", true))
                .continuingSubwordPrefix(f.optionalString("continuing_subword_prefix", "##"))
                .maxInputCharsPerWord(f.optionalInt("max_input_chars_per_word", 100));
        if (json.containsKey("vocab_size")) {
            b.vocabSize(f.requiredInt("vocab_size"));
        }
        Fields special = f.object("special_tokens");
        for (String name : special.keys()) {
            Fields entry = special.object(name);
            b.specialToken(name, new SpecialToken(entry.requiredString("token"), entry.requiredInt("id")));
        }
        return b.build();
    }

    public String vocabFile() {
        return vocabFile;
    }

    /** {@code vocab_size} of the manifest (ids the model's embeddings accept), or null if absent. */
    public Integer vocabSize() {
        return vocabSize;
    }

    public boolean lowercase() {
        return lowercase;
    }

    public boolean stripAccents() {
        return stripAccents;
    }

    public boolean cleanText() {
        return cleanText;
    }

    public boolean chineseChars() {
        return chineseChars;
    }

    public String continuingSubwordPrefix() {
        return continuingSubwordPrefix;
    }

    public int maxInputCharsPerWord() {
        return maxInputCharsPerWord;
    }

    /** name ({@code unk}, {@code cls}, …) → token, in manifest order. */
    public Map<String, SpecialToken> specialTokens() {
        return specialTokens;
    }

    public SpecialToken special(String name) {
        return specialTokens.get(name);
    }

    /** Settings built in code (tests, or an app without a manifest). */
    public static final class Builder {
        private String vocabFile = "vocab.txt";
        private Integer vocabSize;
        private boolean lowercase = true;
        private Boolean stripAccents;
        private boolean cleanText = true;
        private boolean chineseChars = true;
        private String continuingSubwordPrefix = "##";
        private int maxInputCharsPerWord = 100;
        private final Map<String, SpecialToken> specialTokens = new LinkedHashMap<>();

        public Builder vocabFile(String value) {
            vocabFile = value;
            return this;
        }

        public Builder vocabSize(Integer value) {
            vocabSize = value;
            return this;
        }

        public Builder lowercase(boolean value) {
            lowercase = value;
            return this;
        }

        /** null: follow {@link #lowercase}. */
        public Builder stripAccents(Boolean value) {
            stripAccents = value;
            return this;
        }

        public Builder cleanText(boolean value) {
            cleanText = value;
            return this;
        }

        public Builder chineseChars(boolean value) {
            chineseChars = value;
            return this;
        }

        public Builder continuingSubwordPrefix(String value) {
            continuingSubwordPrefix = value;
            return this;
        }

        public Builder maxInputCharsPerWord(int value) {
            maxInputCharsPerWord = value;
            return this;
        }

        public Builder specialToken(String name, SpecialToken token) {
            specialTokens.put(name, token);
            return this;
        }

        public TokenizerSettings build() {
            return new TokenizerSettings(this);
        }
    }
}
