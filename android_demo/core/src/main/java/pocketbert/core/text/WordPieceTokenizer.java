package pocketbert.core.text;

import java.util.ArrayList;
import java.util.List;
import pocketbert.core.BundleException;
import pocketbert.core.InputException;

/**
 * BERT's WordPiece tokenizer rebuilt from {@code vocab.txt} and the manifest's tokenizer settings,
 * equal to the Python runtime's ({@code TextEncoder.from_vocab}, Hugging Face {@code tokenizers}):
 * special tokens typed in the text are matched first, each remaining piece is normalised
 * ({@link BertNormalizer}), split into words ({@link BertPreTokenizer}) and words into pieces
 * ({@link WordPiece}); rows are {@code [CLS] a [SEP]} or {@code [CLS] a [SEP] b [SEP]}.
 *
 * <p>Immutable after construction, so one instance serves any number of threads.
 */
public final class WordPieceTokenizer {
    private final Vocabulary vocabulary;
    private final TokenizerSettings settings;
    private final BertNormalizer normalizer;
    private final BertPreTokenizer preTokenizer;
    private final WordPiece wordPiece;
    private final SpecialTokenMatcher specials;
    private final WordPieceDecoder decoder;
    private final SpecialToken cls;
    private final SpecialToken sep;
    private final SpecialToken unk;
    private final int padId;

    public WordPieceTokenizer(Vocabulary vocabulary, TokenizerSettings settings) {
        this.vocabulary = vocabulary;
        this.settings = settings;
        UnicodeTables tables = UnicodeTables.get();
        this.normalizer = new BertNormalizer(settings.cleanText(), settings.chineseChars(), settings.stripAccents(),
                settings.lowercase(), tables);
        this.preTokenizer = new BertPreTokenizer(tables);
        this.unk = checked(settings.special("unk"));
        this.cls = checked(settings.special("cls"));
        this.sep = checked(settings.special("sep"));
        SpecialToken pad = settings.special("pad");
        this.padId = pad == null ? 0 : checked(pad).id();
        List<SpecialToken> all = new ArrayList<>();
        for (SpecialToken s : settings.specialTokens().values()) {
            all.add(checked(s));
        }
        this.specials = new SpecialTokenMatcher(all);
        this.wordPiece = new WordPiece(vocabulary, unk.token(), settings.continuingSubwordPrefix(),
                settings.maxInputCharsPerWord());
        this.decoder = new WordPieceDecoder(settings.continuingSubwordPrefix());
    }

    /** The vocabulary id of a special token must be the manifest's: anything else means mixed-up files. */
    private SpecialToken checked(SpecialToken special) {
        int id = vocabulary.id(special.token());
        if (id != special.id()) {
            throw new BundleException("the manifest gives " + special.token() + " id " + special.id() + " but vocab.txt "
                    + (id < 0 ? "does not contain it" : "has it on line " + id),
                    "copy vocab.txt and manifest.json from the same bundle");
        }
        return special;
    }

    /** The tokens of {@code text}, without {@code [CLS]}/{@code [SEP]} and without truncation. */
    public TokenSequence tokenize(String text) {
        TextIndex index = TextIndex.of(text);
        int[] cps = index.codePoints();
        TokenSequence.Builder out = TokenSequence.builder(index);
        int start = 0;
        for (int[] match : specials.find(cps)) {
            tokenizePiece(cps, start, match[0], out);
            out.add(specials.id(match[2]), specials.token(match[2]), match[0], match[1]);
            start = match[1];
        }
        tokenizePiece(cps, start, cps.length, out);
        return out.build();
    }

    private void tokenizePiece(int[] cps, int from, int to, TokenSequence.Builder out) {
        if (from == to) {
            return;
        }
        AlignedText normalized = normalizer.normalize(AlignedText.original(cps, from, to));
        for (int[] word : preTokenizer.words(normalized)) {
            wordPiece.tokenize(normalized, word[0], word[1], out);
        }
    }

    /** {@code [CLS] text [SEP]}, the text cut to {@code maxLength - 2} tokens if longer. */
    public Encoding encode(String text, int maxLength) {
        checkRoom(maxLength, 2);
        TokenSequence tokens = tokenize(text);
        int keep = Math.min(tokens.size(), maxLength - 2);
        return Encoding.builder(keep + 2).addSpecial(cls, 0).addAll(tokens.slice(0, keep), 0).addSpecial(sep, 0)
                .build(keep < tokens.size());
    }

    /** {@code [CLS] a [SEP] b [SEP]}, truncated {@code longest_first} to {@code maxLength} (type ids 0 for a, 1 for b). */
    public Encoding encodePair(String a, String b, int maxLength) {
        checkRoom(maxLength, 3);
        TokenSequence first = tokenize(a);
        TokenSequence second = tokenize(b);
        int[] keep = Truncation.longestFirst(first.size(), second.size(), maxLength - 3);
        return Encoding.builder(keep[0] + keep[1] + 3).addSpecial(cls, 0).addAll(first.slice(0, keep[0]), 0)
                .addSpecial(sep, 0).addAll(second.slice(0, keep[1]), 1).addSpecial(sep, 1)
                .build(keep[0] < first.size() || keep[1] < second.size());
    }

    /**
     * {@code text} as rows of at most {@code maxLength} tokens: one row if it fits, else windows of
     * {@code maxLength - 2} text tokens, each starting {@code maxLength - 2 - stride} tokens after the
     * previous one, the last reaching the end (the runtime's NER windows, {@code tokenizers}' overflow).
     */
    public List<Encoding> encodeWindows(String text, int maxLength, int stride) {
        int content = maxLength - 2;
        if (content < 1) {
            throw new InputException("max length " + maxLength + " leaves no room for text tokens between [CLS] and "
                    + "[SEP]", "use a max length of at least 3");
        }
        if (stride < 0 || stride >= content) {
            throw new InputException("stride " + stride + " must be ≥ 0 and smaller than the " + content
                    + " text tokens of a window", "pass a stride between 0 and " + (content - 1));
        }
        TokenSequence tokens = tokenize(text);
        List<Encoding> windows = new ArrayList<>();
        for (int start : Truncation.windowStarts(tokens.size(), content, stride)) {
            int end = Math.min(start + content, tokens.size());
            windows.add(Encoding.builder(end - start + 2).addSpecial(cls, 0).addAll(tokens.slice(start, end), 0)
                    .addSpecial(sep, 0).build(false));
        }
        return windows;
    }

    /** {@code [CLS] ids [SEP]} for given token ids (probing a model with ids no text may produce). */
    public Encoding encodeIds(int... ids) {
        Encoding.Builder row = Encoding.builder(ids.length + 2).addSpecial(cls, 0);
        for (int id : ids) {
            row.addToken(id, vocabulary.token(id), 0);
        }
        return row.addSpecial(sep, 0).build(false);
    }

    /** Tokens back to text with the WordPiece decoder ({@code ##} glued, spaces between words). */
    public String detokenize(List<String> tokens) {
        return decoder.decode(tokens);
    }

    public Vocabulary vocabulary() {
        return vocabulary;
    }

    public TokenizerSettings settings() {
        return settings;
    }

    public SpecialToken cls() {
        return cls;
    }

    public SpecialToken sep() {
        return sep;
    }

    public SpecialToken unk() {
        return unk;
    }

    public int padId() {
        return padId;
    }

    /**
     * Hugging Face's rule: with a continuation prefix the tokenizer knows where words end, so decoding
     * can tell subwords by their spans; without one it falls back to a whitespace heuristic.
     */
    public boolean wordAware() {
        return !settings.continuingSubwordPrefix().isEmpty();
    }

    private static void checkRoom(int maxLength, int specials) {
        if (maxLength < specials) {
            throw new InputException("max length " + maxLength + " leaves no room for the " + specials
                    + " special tokens", "use a max length of at least " + specials);
        }
    }
}
