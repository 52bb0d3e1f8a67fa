plugins {
    id("com.android.application")
    id("org.jetbrains.kotlin.android")
}

android {
    namespace = "pocketbert.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "pocketbert.demo"
        // 24: the core uses String.chars(), codePoints() and streams
        minSdk = 24
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_11
        targetCompatibility = JavaVersion.VERSION_11
    }

    kotlinOptions {
        jvmTarget = "11"
    }

    // The model is memory-mapped from the APK, which needs it stored uncompressed.
    androidResources {
        noCompress += "tflite"
    }
}

dependencies {
    implementation(project(":core"))
    // LiteRT (formerly TensorFlow Lite): org.tensorflow.lite.Interpreter with signature runners.
    implementation("com.google.ai.edge.litert:litert:1.4.2")
}
