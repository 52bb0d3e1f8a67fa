package pocketbert.core.bundle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import pocketbert.core.BundleException;
import pocketbert.core.json.Json;

/**
 * Typed, checked access to one JSON object of the manifest: a missing or mistyped field is a
 * {@link BundleException} naming where it is and what it should be, instead of a
 * {@code ClassCastException} later. Integers must be JSON integers (as Python's {@code isinstance(x, int)}).
 */
public final class Fields {
    private static final String REBUILD = "convert the model again with this version of pocketbert";
    private final Map<String, Object> json;
    private final String where;

    public Fields(Map<String, Object> json, String where) {
        this.json = json;
        this.where = where;
    }

    public String where() {
        return where;
    }

    public Set<String> keys() {
        return json.keySet();
    }

    public boolean has(String key) {
        return json.containsKey(key);
    }

    public Object raw(String key) {
        return json.get(key);
    }

    public String requiredString(String key) {
        Object v = required(key);
        if (!(v instanceof String)) {
            throw mistyped(key, "a string", v);
        }
        return (String) v;
    }

    public String optionalString(String key, String absent) {
        Object v = json.get(key);
        return v == null ? absent : requiredString(key);
    }

    public boolean requiredBoolean(String key) {
        Object v = required(key);
        if (!(v instanceof Boolean)) {
            throw mistyped(key, "true or false", v);
        }
        return (Boolean) v;
    }

    public boolean optionalBoolean(String key, boolean absent) {
        Object v = json.get(key);
        return v == null ? absent : requiredBoolean(key);
    }

    /** true, false, or null when absent or JSON null. */
    public Boolean nullableBoolean(String key) {
        return json.get(key) == null ? null : requiredBoolean(key);
    }

    public int requiredInt(String key) {
        Object v = required(key);
        if (!(v instanceof Long) || (Long) v != ((Long) v).intValue()) {
            throw mistyped(key, "an integer", v);
        }
        return ((Long) v).intValue();
    }

    public int optionalInt(String key, int absent) {
        return json.get(key) == null ? absent : requiredInt(key);
    }

    @SuppressWarnings("unchecked")
    public Fields object(String key) {
        Object v = required(key);
        if (!(v instanceof Map)) {
            throw mistyped(key, "an object", v);
        }
        return new Fields((Map<String, Object>) v, where + "." + key);
    }

    /** The object at {@code key}, or an empty one when absent or null. */
    public Fields optionalObject(String key) {
        return json.get(key) == null ? new Fields(Collections.emptyMap(), where + "." + key) : object(key);
    }

    @SuppressWarnings("unchecked")
    public List<Object> list(String key) {
        Object v = required(key);
        if (!(v instanceof List)) {
            throw mistyped(key, "an array", v);
        }
        return (List<Object>) v;
    }

    /** The objects of the array at {@code key}. */
    @SuppressWarnings("unchecked")
    public List<Fields> objects(String key) {
        List<Fields> out = new ArrayList<>();
        List<Object> items = list(key);
        for (int i = 0; i < items.size(); i++) {
            Object item = items.get(i);
            String at = where + "." + key + "[" + i + "]";
            if (!(item instanceof Map)) {
                throw new BundleException(at + " must be an object, not " + Json.typeName(item), REBUILD);
            }
            out.add(new Fields((Map<String, Object>) item, at));
        }
        return out;
    }

    public List<String> strings(String key) {
        List<String> out = new ArrayList<>();
        for (Object item : list(key)) {
            if (!(item instanceof String)) {
                throw mistyped(key, "an array of strings", item);
            }
            out.add((String) item);
        }
        return out;
    }

    public List<Integer> ints(String key) {
        List<Integer> out = new ArrayList<>();
        for (Object item : list(key)) {
            if (!(item instanceof Long) || (Long) item != ((Long) item).intValue()) {
                throw mistyped(key, "an array of integers", item);
            }
            out.add(((Long) item).intValue());
        }
        return out;
    }

    private Object required(String key) {
        if (!json.containsKey(key) || json.get(key) == null) {
            throw new BundleException(where + ": '" + key + "' is missing", REBUILD);
        }
        return json.get(key);
    }

    private BundleException mistyped(String key, String expected, Object value) {
        return new BundleException(where + ": '" + key + "' must be " + expected + ", not " + Json.typeName(value),
                REBUILD);
    }
}
