package pocketbert.webview;

import android.app.Activity;
import android.content.Intent;
import android.content.pm.ApplicationInfo;
import android.content.pm.PackageManager;
import android.content.res.AssetManager;
import android.os.Bundle;
import android.util.Log;
import android.webkit.JavascriptInterface;
import android.webkit.WebResourceRequest;
import android.webkit.WebResourceResponse;
import android.webkit.WebSettings;
import android.webkit.WebView;
import android.webkit.WebViewClient;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The one screen: a WebView showing the web demo from the APK's assets ({@link AssetRoutes}), which runs the
 * bundles with LiteRT.js. Started with the extra {@code measure=true} (adb shell am start … --ez measure true), the
 * page times every bucket and hands its JSON record to {@link Shell#measured}, which writes it to the app's files
 * folder for pocketbert-bench device to pull.
 */
public final class MainActivity extends Activity {
    static final String TAG = "PocketBERT";

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        boolean debuggable = (getApplicationInfo().flags & ApplicationInfo.FLAG_DEBUGGABLE) != 0;
        // a debug build can be inspected from a desktop Chromium (chrome://inspect), as any debug WebView app
        WebView.setWebContentsDebuggingEnabled(debuggable);
        WebView web = new WebView(this);
        WebSettings settings = web.getSettings();
        settings.setJavaScriptEnabled(true);
        // every file comes through AssetRoutes: no file:// or content:// access for the page
        settings.setAllowFileAccess(false);
        settings.setAllowContentAccess(false);
        settings.setMixedContentMode(WebSettings.MIXED_CONTENT_NEVER_ALLOW);
        web.setWebViewClient(new Client(new AssetRoutes(new Assets(getAssets()))));
        web.addJavascriptInterface(new Shell(new File(getFilesDir(), "measure.json")), "PocketBertShell");
        setContentView(web);
        if (state == null) {
            web.loadUrl(AssetRoutes.ORIGIN + "/index.html" + query(getIntent()));
        } else {
            web.restoreState(state);
        }
    }

    /** The page's query: the phone layout, the bundles' pins, and the Measure run an intent asked for. */
    private String query(Intent intent) {
        String[] pins = new String[PageQuery.TASKS.length];
        try {
            Bundle meta = getPackageManager().getApplicationInfo(getPackageName(), PackageManager.GET_META_DATA).metaData;
            for (int i = 0; i < pins.length; i++) {
                pins[i] = meta == null ? null : meta.getString("pocketbert." + PageQuery.TASKS[i] + "_pin");
            }
        } catch (PackageManager.NameNotFoundException e) {
            Log.e(TAG, "no application info for " + getPackageName() + ": the bundles are loaded unpinned");
        }
        return PageQuery.of(intent.getStringExtra("task"), pins, intent.getBooleanExtra("measure", false),
                intent.getIntExtra("warmup", 5), intent.getIntExtra("runs", 30));
    }

    private static final class Assets implements AssetRoutes.AssetSource {
        private final AssetManager manager;

        Assets(AssetManager manager) {
            this.manager = manager;
        }

        @Override
        public InputStream open(String assetPath) throws IOException {
            // ACCESS_STREAMING: models are stored uncompressed, so they are read straight from the APK
            return manager.open(assetPath, AssetManager.ACCESS_STREAMING);
        }
    }

    private static final class Client extends WebViewClient {
        private final AssetRoutes routes;

        Client(AssetRoutes routes) {
            this.routes = routes;
        }

        @Override
        public WebResourceResponse shouldInterceptRequest(WebView view, WebResourceRequest request) {
            AssetRoutes.Response r = routes.route(request.getMethod(), request.getUrl().toString());
            if (r == null) {
                return null;
            }
            return new WebResourceResponse(r.mimeType, r.encoding, r.status, r.reason, r.headers, r.body);
        }

        @Override
        public boolean shouldOverrideUrlLoading(WebView view, WebResourceRequest request) {
            // the page never navigates away from its own files; a link elsewhere is not followed
            return !AssetRoutes.isOwn(request.getUrl().toString());
        }
    }

    /** What the page may call: only the end of a Measure run. */
    static final class Shell {
        private final File out;

        Shell(File out) {
            this.out = out;
        }

        @JavascriptInterface
        public void measured(String json) {
            // written whole, then renamed: a reader never sees half a record
            File partial = new File(out.getPath() + ".partial");
            try (OutputStream stream = new FileOutputStream(partial)) {
                stream.write(json.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                Log.e(TAG, "could not write " + partial + ": " + e.getMessage());
                return;
            }
            if (!partial.renameTo(out)) {
                Log.e(TAG, "could not rename " + partial + " to " + out);
                return;
            }
            Log.i(TAG, "measured: wrote " + out);
        }
    }
}
