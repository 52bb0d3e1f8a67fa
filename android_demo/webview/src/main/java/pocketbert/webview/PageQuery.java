package pocketbert.webview;

import java.util.Locale;

/**
 * The page's query string from what started the app: the phone layout, each bundle's pin (the SHA-256 of its
 * manifest.json, recorded in the APK's manifest by the build), and the Measure run an intent asked for. Plain Java,
 * so the JVM tests check it; the activity reads the intent's extras and its meta-data.
 */
public final class PageQuery {
    public static final String[] TASKS = {"ner", "classification"};

    private PageQuery() {}

    /**
     * @param task the task to open ("ner" or "classification"; anything else: the page's default)
     * @param pins per task of {@link #TASKS}, the bundle's pin, or null when the build recorded none
     * @param measure whether to run Measure; warmup and runs are clamped to at least 0 and 1
     */
    public static String of(String task, String[] pins, boolean measure, int warmup, int runs) {
        StringBuilder q = new StringBuilder("?shell=android");
        for (int i = 0; i < TASKS.length; i++) {
            String pin = pins[i] == null ? null : pins[i].trim().toLowerCase(Locale.ROOT);
            // a pin is 64 hexadecimal digits; anything else is dropped rather than passed on as page markup
            if (pin != null && pin.matches("[0-9a-f]{64}")) {
                q.append('&').append(TASKS[i]).append("_pin=").append(pin);
            }
        }
        if ("ner".equals(task) || "classification".equals(task)) {
            q.append("&task=").append(task);
        }
        if (measure) {
            q.append("&measure=1&warmup=").append(Math.max(0, warmup)).append("&runs=").append(Math.max(1, runs));
        }
        return q.toString();
    }
}
