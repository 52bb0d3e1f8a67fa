package pocketbert.core.classification;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/** A row of scores as Hugging Face's text-classification pipeline ranks it. */
public final class Ranking {
    private Ranking() {
    }

    /** The best label (the first of equal scores): what the pipeline returns without {@code top_k}. */
    public static LabelScore best(float[] scores, List<String> labels) {
        check(scores, labels);
        int best = 0;
        for (int i = 1; i < scores.length; i++) {
            if (scores[i] > scores[best]) {
                best = i;
            }
        }
        return new LabelScore(labels.get(best), scores[best]);
    }

    /** The {@code k} best labels, best first, equal scores in label order; {@code k} null for all. */
    public static List<LabelScore> top(float[] scores, List<String> labels, Integer k) {
        check(scores, labels);
        if (k != null && k < 1) {
            throw new IllegalArgumentException("top k must be a positive integer or null, not " + k);
        }
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < scores.length; i++) {
            order.add(i);
        }
        Collections.sort(order, Comparator.comparingDouble((Integer i) -> scores[i]).reversed()); // stable
        List<LabelScore> out = new ArrayList<>();
        for (int i : order.subList(0, k == null ? order.size() : Math.min(k, order.size()))) {
            out.add(new LabelScore(labels.get(i), scores[i]));
        }
        return out;
    }

    private static void check(float[] scores, List<String> labels) {
        if (scores.length != labels.size() || scores.length == 0) {
            throw new IllegalArgumentException(scores.length + " scores for " + labels.size() + " labels");
        }
    }
}
