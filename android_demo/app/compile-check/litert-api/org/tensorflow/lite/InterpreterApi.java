// Compile-only stand-in, never packaged: see android_demo/app/compile-check/README.md.
// Signatures as LiteRT's tflite/java/src/main/java/org/tensorflow/lite/InterpreterApi.java,
// google-ai-edge/LiteRT, tag v1.4.1 (commit 7f1d217c77017e45e8696ff2d992b4f7b7025560); bodies throw.
// Left out: the members whose types are not stood in (Options.addDelegate, getDelegates,
// addDelegateFactory, getDelegateFactories, setAccelerationConfig, getAccelerationConfig) and the
// checkerframework @NonNull annotations (they only make those parameters non-null in Kotlin).
package org.tensorflow.lite;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.Map;

/** Interface to TensorFlow Lite model interpreter, excluding experimental methods. */
public interface InterpreterApi extends AutoCloseable {

  /** An options class for controlling runtime interpreter behavior. */
  class Options {
    public Options() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options(Options other) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options setNumThreads(int numThreads) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public int getNumThreads() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options setUseNNAPI(boolean useNNAPI) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public boolean getUseNNAPI() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options setCancellable(boolean allow) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public boolean isCancellable() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    /** Which runtime implementation to use. */
    public enum TfLiteRuntime {
      FROM_APPLICATION_ONLY,
      FROM_SYSTEM_ONLY,
      PREFER_SYSTEM_OVER_APPLICATION,
    }

    public Options setRuntime(TfLiteRuntime runtime) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public TfLiteRuntime getRuntime() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public Options setUseXNNPACK(boolean useXNNPACK) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public boolean getUseXNNPACK() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }
  }

  static InterpreterApi create(File modelFile, InterpreterApi.Options options) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  static InterpreterApi create(ByteBuffer byteBuffer, InterpreterApi.Options options) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  void run(Object input, Object output);

  void runForMultipleInputsOutputs(Object[] inputs, Map<Integer, Object> outputs);

  void allocateTensors();

  void resizeInput(int idx, int[] dims);

  void resizeInput(int idx, int[] dims, boolean strict);

  int getInputTensorCount();

  int getInputIndex(String opName);

  Tensor getInputTensor(int inputIndex);

  int getOutputTensorCount();

  int getOutputIndex(String opName);

  Tensor getOutputTensor(int outputIndex);

  public void runSignature(
      Map<String, Object> inputs, Map<String, Object> outputs, String signatureKey);

  public void runSignature(Map<String, Object> inputs, Map<String, Object> outputs);

  public Tensor getInputTensorFromSignature(String inputName, String signatureKey);

  public String[] getSignatureKeys();

  public String[] getSignatureInputs(String signatureKey);

  public String[] getSignatureOutputs(String signatureKey);

  public Tensor getOutputTensorFromSignature(String outputName, String signatureKey);

  Long getLastNativeInferenceDurationNanoseconds();

  @Override
  void close();
}
