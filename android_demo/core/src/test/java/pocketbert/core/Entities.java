package pocketbert.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import pocketbert.core.ner.Entity;

/** Java entities against Hugging Face / Python runtime entity dicts: every field equal, scores within a tolerance. */
public final class Entities {
    /** The golden README's tolerance: float32 softmax in another language may differ in the last bits. */
    public static final double SCORE_TOLERANCE = 1e-6;

    private Entities() {
    }

    /** Differences, one line each; empty if the lists are the same. */
    public static List<String> diff(List<Entity> got, List<Object> expected) {
        List<String> diffs = new ArrayList<>();
        if (got.size() != expected.size()) {
            diffs.add("expected " + expected.size() + " entities, got " + got.size() + ": " + got + " vs " + expected);
            return diffs;
        }
        for (int i = 0; i < got.size(); i++) {
            Entity g = got.get(i);
            Map<String, Object> w = JsonValues.object(expected.get(i));
            boolean grouped = w.containsKey("entity_group");
            String label = (String) (grouped ? w.get("entity_group") : w.get("entity"));
            double score = ((Number) w.get("score")).doubleValue();
            boolean same = g.grouped() == grouped && g.label().equals(label) && g.word().equals(w.get("word"))
                    && g.start() == ((Number) w.get("start")).intValue() && g.end() == ((Number) w.get("end")).intValue()
                    && (grouped || g.index() == ((Number) w.get("index")).intValue())
                    && Math.abs(g.score() - score) <= SCORE_TOLERANCE;
            if (!same) {
                diffs.add(String.format(Locale.ROOT, "entity %d: expected %s, got %s (score %.9f vs %.9f)", i, w, g,
                        score, g.score()));
            }
        }
        return diffs;
    }
}
