package pocketbert.core.ner;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import pocketbert.core.classification.ScoreFunction;
import pocketbert.core.text.TextIndex;
import pocketbert.core.text.WordPieceDecoder;

/**
 * Logits of token rows → entities, step for step as the Python runtime's {@code runtime/ner.py}
 * (itself Hugging Face's token-classification post-processing):
 *
 * <ol>
 *   <li>softmax per token (float32); special tokens are skipped;</li>
 *   <li>a token's text is its span of the input; it continues the previous word (a subword) when the
 *       span's length differs from the token's ({@code ##ing}, or an NFD-accented word); {@code [UNK]}
 *       shows the text itself and always starts a word;</li>
 *   <li>{@code none}: every token; {@code simple}: tokens grouped; {@code first}/{@code average}/{@code max}:
 *       each word's tokens first agree on one label, then words are grouped;</li>
 *   <li>grouping: {@code B-X} starts an entity, {@code I-X} or an unprefixed {@code X} continues an
 *       adjacent {@code X} (so IOB2 and IOB1 decode alike); a group's score is its members' mean;</li>
 *   <li>results labelled with an ignored label ({@code O}) are dropped.</li>
 * </ol>
 *
 * Texts longer than one window are stitched into one sequence and decoded once ({@link #decodeText}).
 */
public final class TokenClassificationDecoder {
    private final List<String> labels;
    private final int unkId;
    private final boolean wordAware;
    private final WordPieceDecoder detokenizer;
    private final Set<String> ignoreLabels;

    /**
     * @param unkId id of the unknown token, or -1 if there is none
     * @param wordAware whether subwords are told by span length (WordPiece with a continuation prefix)
     *     rather than by the whitespace heuristic
     * @param ignoreLabels labels whose results are dropped (Hugging Face's default: {@code O})
     */
    public TokenClassificationDecoder(List<String> labels, int unkId, boolean wordAware, WordPieceDecoder detokenizer,
                                      Set<String> ignoreLabels) {
        this.labels = Collections.unmodifiableList(new ArrayList<>(labels));
        this.unkId = unkId;
        this.wordAware = wordAware;
        this.detokenizer = detokenizer;
        this.ignoreLabels = Collections.unmodifiableSet(new HashSet<>(ignoreLabels));
    }

    /**
     * Entities of a whole text from its windows and their logits ({@code [tokens][labels]} each).
     * {@code step}: tokens between window starts. Several windows are stitched into one sequence of the
     * whole text, each token's row from the window {@link WindowSeams} picks, and decoded once: no entity
     * is cut where windows meet, and {@link Entity#index()} counts tokens of the whole text.
     */
    public List<Entity> decodeText(TextIndex text, List<TokenWindow> windows, List<float[][]> logits,
                                   Aggregation aggregation, int step) {
        if (windows.size() != logits.size()) {
            throw new IllegalArgumentException(windows.size() + " windows but " + logits.size() + " logit matrices");
        }
        if (windows.size() == 1) {
            return decode(text, windows.get(0), logits.get(0), aggregation, 0);
        }
        List<int[]> rows = stitchedRows(windows, step);
        int n = rows.size();
        int[] ids = new int[n];
        List<String> tokens = new ArrayList<>(n);
        int[] starts = new int[n];
        int[] ends = new int[n];
        int[] special = new int[n];
        float[][] stitched = new float[n][];
        for (int r = 0; r < n; r++) {
            TokenWindow w = windows.get(rows.get(r)[0]);
            int i = rows.get(r)[1];
            ids[r] = w.id(i);
            tokens.add(w.token(i));
            starts[r] = w.start(i);
            ends[r] = w.end(i);
            special[r] = w.isSpecial(i) ? 1 : 0;
            stitched[r] = logits.get(rows.get(r)[0])[i];
        }
        return decode(text, new TokenWindow(ids, tokens, starts, ends, special), stitched, aggregation, 0);
    }

    /**
     * {@code {window, row}} of the stitched sequence: the first window's leading specials, every text token
     * from its chosen window, the last window's trailing specials.
     */
    private static List<int[]> stitchedRows(List<TokenWindow> windows, int step) {
        List<int[]> textRows = new ArrayList<>();
        int[] lengths = new int[windows.size()];
        for (int k = 0; k < windows.size(); k++) {
            TokenWindow w = windows.get(k);
            List<Integer> rows = new ArrayList<>();
            for (int i = 0; i < w.size(); i++) {
                if (!w.isSpecial(i)) {
                    rows.add(i);
                }
            }
            textRows.add(rows.stream().mapToInt(Integer::intValue).toArray());
            lengths[k] = rows.size();
        }
        List<int[]> out = new ArrayList<>();
        int[] first = textRows.get(0);
        for (int i = 0; i < (first.length > 0 ? first[0] : 0); i++) {
            out.add(new int[] {0, i});
        }
        for (int[] source : WindowSeams.tokenSources(lengths, step)) {
            out.add(new int[] {source[0], textRows.get(source[0])[source[1]]});
        }
        int lastWindow = windows.size() - 1;
        int[] last = textRows.get(lastWindow);
        for (int i = last.length > 0 ? last[last.length - 1] + 1 : 0; i < windows.get(lastWindow).size(); i++) {
            out.add(new int[] {lastWindow, i});
        }
        return out;
    }

    /** Entities of one window; {@code indexOffset} shifts {@link Entity#index()} for windows after the first. */
    public List<Entity> decode(TextIndex text, TokenWindow window, float[][] logits, Aggregation aggregation,
                               int indexOffset) {
        if (logits.length != window.size()) {
            throw new IllegalArgumentException(window.size() + " tokens but " + logits.length + " rows of logits");
        }
        float[][] probs = new float[logits.length][];
        for (int i = 0; i < logits.length; i++) {
            if (logits[i].length != labels.size()) {
                throw new IllegalArgumentException(logits[i].length + " logits for " + labels.size() + " labels");
            }
            probs[i] = ScoreFunction.SOFTMAX.apply(logits[i]);
        }
        List<Scored> tokens = tokensOf(text, window, probs);
        List<Labelled> results = new ArrayList<>();
        if (aggregation == Aggregation.NONE || aggregation == Aggregation.SIMPLE) {
            for (Scored t : tokens) {
                results.add(new Labelled(labels.get(t.label), t.score, t.index + indexOffset, t.word, t.start, t.end));
            }
        } else {
            results = words(tokens, aggregation, probs);
        }
        List<Entity> out = new ArrayList<>();
        if (aggregation == Aggregation.NONE) {
            for (Labelled r : results) {
                if (!ignoreLabels.contains(r.label)) {
                    out.add(entity(text, r.label, r.score, r.index, r.word, r.start, r.end, false));
                }
            }
        } else {
            for (Entity group : group(text, results)) {
                if (!ignoreLabels.contains(group.label())) {
                    out.add(group);
                }
            }
        }
        return out;
    }

    /** Non-special tokens with their best label, text span and whether each continues the previous word. */
    private List<Scored> tokensOf(TextIndex text, TokenWindow window, float[][] probs) {
        List<Scored> out = new ArrayList<>();
        for (int i = 0; i < window.size(); i++) {
            if (window.isSpecial(i)) {
                continue;
            }
            String word = window.token(i);
            int start = window.start(i);
            int end = window.end(i);
            boolean subword;
            if (unkId >= 0 && window.id(i) == unkId) {
                word = text.slice(start, end);
                subword = false;
            } else if (wordAware) {
                subword = word.codePointCount(0, word.length()) != end - start;
            } else {
                subword = start > 0 && !text.slice(start - 1, Math.min(start + 1, text.length())).contains(" ");
            }
            int best = argmax(probs[i]);
            out.add(new Scored(i, word, start, end, subword, best, probs[i][best]));
        }
        return out;
    }

    private List<Labelled> words(List<Scored> tokens, Aggregation aggregation, float[][] probs) {
        List<Labelled> words = new ArrayList<>();
        List<Scored> word = new ArrayList<>();
        for (Scored token : tokens) {
            if (!word.isEmpty() && !token.subword) {
                words.add(word(word, aggregation, probs));
                word = new ArrayList<>();
            }
            word.add(token);
        }
        if (!word.isEmpty()) {
            words.add(word(word, aggregation, probs));
        }
        return words;
    }

    /** The tokens of one word → one labelled word. */
    private Labelled word(List<Scored> group, Aggregation aggregation, float[][] probs) {
        int label;
        double score;
        if (aggregation == Aggregation.FIRST || group.size() == 1) {
            label = group.get(0).label;
            score = group.get(0).score;
        } else if (aggregation == Aggregation.MAX) {
            Scored top = group.get(0);
            for (Scored t : group) {
                if (t.score > top.score) {
                    top = t; // the first of equally confident tokens, as Python's max() picks
                }
            }
            label = top.label;
            score = top.score;
        } else if (aggregation == Aggregation.AVERAGE) {
            float[] mean = new float[labels.size()];
            for (Scored t : group) {
                for (int j = 0; j < mean.length; j++) {
                    mean[j] += probs[t.index][j];
                }
            }
            for (int j = 0; j < mean.length; j++) {
                mean[j] = (float) ((double) mean[j] / group.size()); // numpy: float32 sum / int count in float64
            }
            label = argmax(mean);
            score = mean[label];
        } else {
            throw new IllegalArgumentException("not a word aggregation: " + aggregation);
        }
        List<String> pieces = new ArrayList<>();
        for (Scored t : group) {
            pieces.add(t.word);
        }
        return new Labelled(labels.get(label), score, -1, detokenizer.decode(pieces), group.get(0).start,
                group.get(group.size() - 1).end);
    }

    /** Adjacent results of one tag → groups; groups whose tag is ignored are not built. */
    private List<Entity> group(TextIndex text, List<Labelled> results) {
        List<Entity> groups = new ArrayList<>();
        List<Labelled> current = new ArrayList<>();
        for (Labelled r : results) {
            if (!current.isEmpty()) {
                String[] tag = splitTag(r.label);
                if (!tag[1].equals(splitTag(current.get(current.size() - 1).label)[1]) || tag[0].equals("B")) {
                    closeGroup(text, current, groups);
                    current = new ArrayList<>();
                }
            }
            current.add(r);
        }
        if (!current.isEmpty()) {
            closeGroup(text, current, groups);
        }
        return groups;
    }

    private void closeGroup(TextIndex text, List<Labelled> members, List<Entity> groups) {
        String tag = afterFirstDash(members.get(0).label);
        if (ignoreLabels.contains(tag)) {
            return;
        }
        double sum = 0;
        List<String> words = new ArrayList<>();
        for (Labelled m : members) {
            sum += m.score;
            words.add(m.word);
        }
        groups.add(entity(text, tag, sum / members.size(), -1, detokenizer.decode(words), members.get(0).start,
                members.get(members.size() - 1).end, true));
    }

    /** {@code B-PER} → (B, PER); {@code I-PER} → (I, PER); a label without prefix continues, like {@code I-}. */
    static String[] splitTag(String label) {
        if (label.startsWith("B-")) {
            return new String[] {"B", label.substring(2)};
        }
        if (label.startsWith("I-")) {
            return new String[] {"I", label.substring(2)};
        }
        return new String[] {"I", label};
    }

    /** Python's {@code label.split("-", 1)[-1]}: a group's {@code entity_group}. */
    private static String afterFirstDash(String label) {
        int dash = label.indexOf('-');
        return dash < 0 ? label : label.substring(dash + 1);
    }

    private static int argmax(float[] row) {
        int best = 0;
        for (int j = 1; j < row.length; j++) {
            if (row[j] > row[best]) {
                best = j;
            }
        }
        return best;
    }

    private static Entity entity(TextIndex text, String label, double score, int index, String word, int start,
                                 int end, boolean grouped) {
        return new Entity(label, score, index, word, start, end, text.utf16(start), text.utf16(end), grouped);
    }

    /** A non-special token with its best label. */
    private static final class Scored {
        final int index;
        final String word;
        final int start;
        final int end;
        final boolean subword;
        final int label;
        final float score;

        Scored(int index, String word, int start, int end, boolean subword, int label, float score) {
            this.index = index;
            this.word = word;
            this.start = start;
            this.end = end;
            this.subword = subword;
            this.label = label;
            this.score = score;
        }
    }

    /** A token or word with its label, before grouping. */
    private static final class Labelled {
        final String label;
        final double score;
        final int index;
        final String word;
        final int start;
        final int end;

        Labelled(String label, double score, int index, String word, int start, int end) {
            this.label = label;
            this.score = score;
            this.index = index;
            this.word = word;
            this.start = start;
            this.end = end;
        }
    }
}
