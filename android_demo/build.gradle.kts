// PocketBERT Android demo: `core` is plain Java (tokenizer, decoding, manifest, pipelines; no Android
// or third-party dependencies), `app` is the Android application that runs bundles with LiteRT.
plugins {
    id("com.android.application") version "8.7.3" apply false
    id("org.jetbrains.kotlin.android") version "2.0.21" apply false
}
