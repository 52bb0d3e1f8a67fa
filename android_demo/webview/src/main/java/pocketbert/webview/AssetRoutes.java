package pocketbert.webview;

import java.io.ByteArrayInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * What the WebView gets for each request: the page's files from the APK's {@code assets/www/}, under one https
 * origin (AndroidX's WebViewAssetLoader uses the same host), with their MIME types and fixed headers; anything else
 * is answered here too, so no request ever reaches the network (the app has no INTERNET permission either).
 *
 * <p>Plain Java with no Android types, so the JVM tests and the browser check run exactly this code; the activity
 * only turns a {@link Response} into a WebResourceResponse.
 */
public final class AssetRoutes {
    /** The page's origin: https, so that the page is a secure context (crypto.subtle checks every file's SHA-256). */
    public static final String ORIGIN = "https://appassets.androidplatform.net";
    /** The asset folder the origin's root maps to. */
    public static final String ROOT = "www";

    /**
     * Sent with every answer. The page runs only its own scripts and LiteRT's WebAssembly, fetches only its own
     * files, and is never framed; 'wasm-unsafe-eval' is what compiling WebAssembly needs, nothing more.
     */
    public static final String CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; "
            + "worker-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; object-src 'none'; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private static final Map<String, String[]> TYPES = new LinkedHashMap<>();

    static {
        // extension -> {MIME type, charset or null}; a file of any other kind is not served
        TYPES.put("html", new String[] {"text/html", "utf-8"});
        TYPES.put("js", new String[] {"text/javascript", "utf-8"});
        TYPES.put("mjs", new String[] {"text/javascript", "utf-8"});
        TYPES.put("css", new String[] {"text/css", "utf-8"});
        TYPES.put("json", new String[] {"application/json", "utf-8"});
        TYPES.put("txt", new String[] {"text/plain", "utf-8"});
        // LiteRT.js compiles its module with WebAssembly.instantiateStreaming, which needs exactly this type
        TYPES.put("wasm", new String[] {"application/wasm", null});
        TYPES.put("tflite", new String[] {"application/octet-stream", null});
        TYPES.put("png", new String[] {"image/png", null});
        TYPES.put("svg", new String[] {"image/svg+xml", "utf-8"});
    }

    /** Opens an asset by its path inside the APK's assets (AssetManager.open, or a folder in the tests). */
    public interface AssetSource {
        InputStream open(String assetPath) throws IOException;
    }

    /** An answer: what WebResourceResponse's six-argument constructor takes. */
    public static final class Response {
        public final int status;
        public final String reason;
        public final String mimeType;
        public final String encoding;
        public final Map<String, String> headers;
        public final InputStream body;

        Response(int status, String reason, String mimeType, String encoding, InputStream body) {
            this.status = status;
            this.reason = reason;
            this.mimeType = mimeType;
            this.encoding = encoding;
            Map<String, String> headers = new LinkedHashMap<>();
            headers.put("Content-Security-Policy", CONTENT_SECURITY_POLICY);
            headers.put("X-Content-Type-Options", "nosniff");
            headers.put("Cache-Control", "no-cache");
            headers.put("Referrer-Policy", "no-referrer");
            this.headers = Collections.unmodifiableMap(headers);
            this.body = body;
        }
    }

    private final AssetSource assets;

    public AssetRoutes(AssetSource assets) {
        this.assets = assets;
    }

    /** Whether a URL is one of the page's own (navigation elsewhere is refused by the activity). */
    public static boolean isOwn(String url) {
        return url.equals(ORIGIN) || url.startsWith(ORIGIN + "/");
    }

    /**
     * The answer to {@code method url}, or null for a URL the WebView resolves without a network (data:, blob:,
     * about:). Every http(s) URL gets an answer: the page's file, or a refusal with a plain-text reason.
     */
    public Response route(String method, String url) {
        String scheme = url.contains(":") ? url.substring(0, url.indexOf(':')).toLowerCase(Locale.ROOT) : "";
        if (!scheme.equals("http") && !scheme.equals("https")) {
            return null;
        }
        if (!isOwn(url)) {
            return refusal(403, "Forbidden", "this app makes no network requests: " + url + " is not one of its files");
        }
        if (!"GET".equals(method) && !"HEAD".equals(method)) {
            return refusal(405, "Method Not Allowed", method + " is not served: the page's files are read-only");
        }
        String path = assetPath(url.substring(ORIGIN.length()));
        if (path == null) {
            return refusal(404, "Not Found", "not a file of this page: " + url);
        }
        String[] type = TYPES.get(extension(path));
        if (type == null) {
            return refusal(404, "Not Found", "not a kind of file this page serves: " + url);
        }
        try {
            return new Response(200, "OK", type[0], type[1], assets.open(ROOT + "/" + path));
        } catch (FileNotFoundException e) {
            return refusal(404, "Not Found", "no such file in the app: " + url);
        } catch (IOException e) {
            return refusal(500, "Internal Server Error", "could not read " + url + ": " + e.getMessage());
        }
    }

    /**
     * The asset path (below {@link #ROOT}) of a URL's path, or null when it is not a plain relative path: no "..",
     * ".", empty or hidden segments, no backslashes, control characters or malformed escapes. Query and fragment are
     * ignored; "/" is index.html.
     */
    static String assetPath(String rest) {
        int end = rest.length();
        for (char c : new char[] {'?', '#'}) {
            int at = rest.indexOf(c);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        String raw = rest.substring(0, end);
        if (raw.isEmpty() || raw.equals("/")) {
            return "index.html";
        }
        if (!raw.startsWith("/")) {
            return null;
        }
        String decoded = percentDecode(raw.substring(1));
        if (decoded == null) {
            return null;
        }
        for (String segment : decoded.split("/", -1)) {
            if (segment.isEmpty() || segment.startsWith(".")) {
                return null;
            }
            for (int i = 0; i < segment.length(); i++) {
                char c = segment.charAt(i);
                if (c < 0x20 || c == 0x7f || c == '\\' || c == ':') {
                    return null;
                }
            }
        }
        return decoded;
    }

    /** RFC 3986 percent-decoding as UTF-8; null for a malformed escape or invalid UTF-8. */
    static String percentDecode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        byte[] out = new byte[s.length() * 4];
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    return null;
                }
                int hi = Character.digit(s.charAt(i + 1), 16);
                int lo = Character.digit(s.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    return null;
                }
                out[n++] = (byte) (hi * 16 + lo);
                i += 2;
            } else {
                for (byte b : String.valueOf(c).getBytes(StandardCharsets.UTF_8)) {
                    out[n++] = b;
                }
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(out, 0, n)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            return null;
        }
    }

    private static String extension(String path) {
        String name = path.substring(path.lastIndexOf('/') + 1);
        int dot = name.lastIndexOf('.');
        return dot < 0 ? "" : name.substring(dot + 1).toLowerCase(Locale.ROOT);
    }

    private static Response refusal(int status, String reason, String message) {
        byte[] text = (message + "\n").getBytes(StandardCharsets.UTF_8);
        return new Response(status, reason, "text/plain", "utf-8", new ByteArrayInputStream(text));
    }
}
