// Compile-only stand-in, never packaged: see android_demo/app/compile-check/README.md.
// Signatures as LiteRT's tflite/java/src/main/java/org/tensorflow/lite/Interpreter.java,
// google-ai-edge/LiteRT, tag v1.4.1 (commit 7f1d217c77017e45e8696ff2d992b4f7b7025560); bodies throw.
// Left out: Options.addDelegate and addDelegateFactory (their types are not stood in), the
// private constructor taking the native wrapper, and the @NonNull annotations.
package org.tensorflow.lite;

import java.io.File;
import java.nio.ByteBuffer;

/** Driver class to drive model inference with TensorFlow Lite. */
public final class Interpreter extends InterpreterImpl implements InterpreterApi {

  /** An options class for controlling runtime interpreter behavior. */
  public static class Options extends InterpreterImpl.Options {
    public Options() {}

    public Options(InterpreterApi.Options options) {
      super(options);
    }

    Options(InterpreterImpl.Options options) {
      super(options);
    }

    @Override
    public Options setUseXNNPACK(boolean useXNNPACK) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    @Override
    public Options setNumThreads(int numThreads) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    @Override
    public Options setUseNNAPI(boolean useNNAPI) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    /** @deprecated Prefer using NnApiDelegate.Options#setAllowFp16(boolean enable). */
    @Deprecated
    public Options setAllowFp16PrecisionForFp32(boolean allow) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options setAllowBufferHandleOutput(boolean allow) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    @Override
    public Options setCancellable(boolean allow) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    @Override
    public Options setRuntime(InterpreterApi.Options.TfLiteRuntime runtime) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }
  }

  public Interpreter(File modelFile) {
    this(modelFile, null);
  }

  public Interpreter(File modelFile, Options options) {
    super(modelFile, options);
  }

  public Interpreter(ByteBuffer byteBuffer) {
    this(byteBuffer, null);
  }

  public Interpreter(ByteBuffer byteBuffer, Options options) {
    super(byteBuffer, options);
  }

  public void resetVariableTensors() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  public void setCancelled(boolean cancelled) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }
}
