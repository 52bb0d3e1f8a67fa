package pocketbert.webview;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

/**
 * The app's {@link AssetRoutes} behind a loopback HTTP server, over an APK's extracted assets folder: the browser
 * check routes the page's origin here, so Chromium gets exactly what the WebView would (status, type, headers,
 * bytes, refusals). A test tool, never packaged.
 *
 * <pre>java -cp CLASSES pocketbert.webview.AssetServer ASSETS_DIR   # prints "listening PORT"</pre>
 */
public final class AssetServer {
    private AssetServer() {}

    public static void main(String[] args) throws IOException {
        Path root = Paths.get(args[0]).toAbsolutePath().normalize();
        AssetRoutes routes = new AssetRoutes(path -> new FileInputStream(root.resolve(path).toFile()));
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", exchange -> answer(routes, exchange));
        server.start();
        System.out.println("listening " + server.getAddress().getPort());
        System.out.flush();
    }

    private static void answer(AssetRoutes routes, HttpExchange exchange) throws IOException {
        // the browser check forwards every request of the page with its original URL, other origins' included
        String original = exchange.getRequestHeaders().getFirst("X-Pocketbert-Url");
        String url = original != null ? original : AssetRoutes.ORIGIN + exchange.getRequestURI().getRawPath()
                + (exchange.getRequestURI().getRawQuery() == null ? "" : "?" + exchange.getRequestURI().getRawQuery());
        AssetRoutes.Response r = routes.route(exchange.getRequestMethod(), url);
        for (Map.Entry<String, String> h : r.headers.entrySet()) {
            exchange.getResponseHeaders().set(h.getKey(), h.getValue());
        }
        // WebResourceResponse's (mimeType, encoding) pair becomes one Content-Type header in the WebView
        exchange.getResponseHeaders().set("Content-Type", r.mimeType + (r.encoding == null ? "" : "; charset=" + r.encoding));
        byte[] body;
        try (InputStream in = r.body) {
            body = in.readAllBytes();
        }
        exchange.sendResponseHeaders(r.status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
