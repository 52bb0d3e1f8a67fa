package pocketbert.webview;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class AssetRoutesTest {
    private static final String O = AssetRoutes.ORIGIN;

    /** An APK's assets in memory; records every path asked for, so a refusal can be shown to open nothing. */
    private static final class Assets implements AssetRoutes.AssetSource {
        final Map<String, byte[]> files = new HashMap<>();
        final List<String> opened = new ArrayList<>();

        Assets put(String path, String text) {
            files.put(path, text.getBytes(StandardCharsets.UTF_8));
            return this;
        }

        @Override
        public InputStream open(String path) throws IOException {
            opened.add(path);
            byte[] bytes = files.get(path);
            if (bytes == null) {
                throw new FileNotFoundException(path);
            }
            return new ByteArrayInputStream(bytes);
        }
    }

    private final Assets assets = new Assets()
            .put("www/index.html", "<!doctype html>")
            .put("www/app.js", "export {}")
            .put("www/pocketbert-wasm/litert_wasm_internal.wasm", "\0asm")
            .put("www/bundles/ner/model.int4-dynamic.tflite", "TFL3")
            .put("www/bundles/ner/manifest.json", "{}")
            .put("www/bundles/ner/vocab.txt", "[PAD]")
            .put("www/café é.txt", "accent")
            .put("secret.txt", "outside www")
            .put("www/notes.md", "unknown kind");
    private final AssetRoutes routes = new AssetRoutes(assets);

    private static String body(AssetRoutes.Response r) throws IOException {
        byte[] all = new byte[4096];
        int n = 0;
        for (int got; (got = r.body.read(all, n, all.length - n)) > 0; ) {
            n += got;
        }
        return new String(all, 0, n, StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @CsvSource({
        "/,                                                index.html,                                   text/html,                utf-8",
        "/index.html?shell=android&task=ner,               index.html,                                   text/html,                utf-8",
        "/app.js,                                          app.js,                                       text/javascript,          utf-8",
        "/pocketbert-wasm/litert_wasm_internal.wasm,       pocketbert-wasm/litert_wasm_internal.wasm,    application/wasm,         ",
        "/bundles/ner/model.int4-dynamic.tflite#x,         bundles/ner/model.int4-dynamic.tflite,        application/octet-stream, ",
        "/bundles/ner/manifest.json,                       bundles/ner/manifest.json,                    application/json,         utf-8",
        "/bundles/ner/vocab.txt,                           bundles/ner/vocab.txt,                        text/plain,               utf-8",
        "/caf%C3%A9%20%C3%A9.txt,                          café é.txt,                                   text/plain,               utf-8",
    })
    void servesThePagesFilesWithTheirTypes(String path, String asset, String mime, String encoding) throws IOException {
        AssetRoutes.Response r = routes.route("GET", O + path);
        assertEquals(200, r.status);
        assertEquals("OK", r.reason);
        assertEquals(mime, r.mimeType);
        assertEquals(encoding, r.encoding);
        assertEquals(List.of("www/" + asset), assets.opened);
        assertArrayEquals(assets.files.get("www/" + asset), body(r).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void everyAnswerCarriesTheFixedHeaders() {
        for (String url : new String[] {O + "/", O + "/missing.js", "https://example.com/"}) {
            Map<String, String> h = routes.route("GET", url).headers;
            assertEquals(AssetRoutes.CONTENT_SECURITY_POLICY, h.get("Content-Security-Policy"), url);
            assertEquals("nosniff", h.get("X-Content-Type-Options"), url);
            assertEquals("no-cache", h.get("Cache-Control"), url);
            // no cross-origin isolation: the app ships LiteRT.js's single-threaded builds only
            assertFalse(h.containsKey("Cross-Origin-Embedder-Policy"), url);
        }
        assertTrue(AssetRoutes.CONTENT_SECURITY_POLICY.contains("connect-src 'self'"));
        assertFalse(AssetRoutes.CONTENT_SECURITY_POLICY.contains("unsafe-inline"));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "/../secret.txt", "/bundles/../../secret.txt", "/%2e%2e/secret.txt", "/bundles/%2E%2E/%2e%2e/secret.txt",
        "/bundles/ner/..%2f..%2f..%2fsecret.txt", "//secret.txt", "/bundles//ner/vocab.txt", "/./index.html",
        "/.hidden.js", "/bundles/.ner/vocab.txt", "/bundles\\ner\\vocab.txt", "/bundles%5Cner%5Cvocab.txt",
        "/index.html%00.js", "/%zz.js", "/%C3.txt", "/%", "/file:/etc/passwd.txt", "/bundles/ner/",
    })
    void refusesPathsThatAreNotPlainRelativeOnesWithoutOpeningAnything(String path) {
        AssetRoutes.Response r = routes.route("GET", O + path);
        assertEquals(404, r.status, path);
        assertEquals("text/plain", r.mimeType);
        assertEquals(List.of(), assets.opened, path);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/notes.md", "/bundles/ner/model", "/secret"})
    void refusesKindsOfFileThePageDoesNotServe(String path) throws IOException {
        AssetRoutes.Response r = routes.route("GET", O + path);
        assertEquals(404, r.status);
        assertTrue(body(r).contains("not a kind of file this page serves"), path);
        assertEquals(List.of(), assets.opened);
    }

    @Test
    void aMissingFileIsNotFound() throws IOException {
        AssetRoutes.Response r = routes.route("GET", O + "/bundles/classification/manifest.json");
        assertEquals(404, r.status);
        assertTrue(body(r).startsWith("no such file in the app: "));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "https://example.com/index.html", "http://appassets.androidplatform.net/index.html",
        "https://appassets.androidplatform.net.evil.com/index.html", "https://appassets.androidplatform.net@evil.com/",
        "https://appassets.androidplatform.net:444/index.html", "HTTPS://cdn.jsdelivr.net/x.js",
    })
    void answersEveryOtherHttpUrlItselfSoNothingReachesTheNetwork(String url) {
        AssetRoutes.Response r = routes.route("GET", url);
        assertEquals(403, r.status, url);
        assertFalse(AssetRoutes.isOwn(url), url);
        assertEquals(List.of(), assets.opened);
    }

    @ParameterizedTest
    @ValueSource(strings = {"data:text/plain,hi", "blob:https://appassets.androidplatform.net/1-2", "about:blank"})
    void leavesUrlsWithoutANetworkToTheWebView(String url) {
        assertNull(routes.route("GET", url));
    }

    @ParameterizedTest
    @ValueSource(strings = {"POST", "PUT", "DELETE", "OPTIONS"})
    void servesOnlyReads(String method) {
        assertEquals(405, routes.route(method, O + "/index.html").status);
        assertEquals(List.of(), assets.opened);
    }

    @Test
    void anUnreadableAssetIsAServerErrorWithItsReason() throws IOException {
        AssetRoutes broken = new AssetRoutes(path -> {
            throw new IOException("disk gone");
        });
        AssetRoutes.Response r = broken.route("GET", O + "/app.js");
        assertEquals(500, r.status);
        assertTrue(body(r).contains("disk gone"));
    }
}
