package pocketbert.core.ner;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Entities of overlapping windows → one list without overlaps, as Hugging Face merges {@code stride=}
 * chunks (the runtime's {@code windows.merge_overlapping}): sorted by start, an entity starting inside
 * the previous one replaces it if it is longer, or as long with a higher score.
 */
public final class OverlapMerge {
    private OverlapMerge() {
    }

    public static List<Entity> merge(List<Entity> entities) {
        if (entities.isEmpty()) {
            return entities;
        }
        List<Entity> sorted = new ArrayList<>(entities);
        sorted.sort(Comparator.comparingInt(Entity::start)); // stable, as Python's sorted()
        List<Entity> merged = new ArrayList<>();
        Entity previous = sorted.get(0);
        for (Entity entity : sorted) {
            if (previous.start() <= entity.start() && entity.start() < previous.end()) {
                int length = entity.end() - entity.start();
                int previousLength = previous.end() - previous.start();
                if (length > previousLength || (length == previousLength && entity.score() > previous.score())) {
                    previous = entity;
                }
            } else {
                merged.add(previous);
                previous = entity;
            }
        }
        merged.add(previous);
        return merged;
    }
}
