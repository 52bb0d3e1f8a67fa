// Compile-only stand-in, never packaged: see android_demo/app/compile-check/README.md.
// Signatures as LiteRT's tflite/java/src/main/java/org/tensorflow/lite/InterpreterImpl.java,
// google-ai-edge/LiteRT, tag v1.4.1 (commit 7f1d217c77017e45e8696ff2d992b4f7b7025560); bodies throw.
// Package-private, as in LiteRT: Interpreter's public methods are declared here, so a Kotlin call
// reaches them through a package-private superclass, as it does with the real AAR.
// Left out: the constructor taking the native wrapper, and the @NonNull annotations.
package org.tensorflow.lite;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.Map;

/** Package-private class that implements InterpreterApi. */
class InterpreterImpl implements InterpreterApi {

  /** Interpreter creation options; the public Interpreter.Options extends this. */
  static class Options extends InterpreterApi.Options {
    public Options() {}

    public Options(InterpreterApi.Options options) {
      super(options);
    }

    public Options(Options other) {
      super(other);
    }
  }

  InterpreterImpl(File modelFile, Options options) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  InterpreterImpl(ByteBuffer byteBuffer, Options options) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void run(Object input, Object output) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void runForMultipleInputsOutputs(Object[] inputs, Map<Integer, Object> outputs) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void allocateTensors() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void resizeInput(int idx, int[] dims) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void resizeInput(int idx, int[] dims, boolean strict) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public int getInputTensorCount() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public int getInputIndex(String opName) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public Tensor getInputTensor(int inputIndex) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public int getOutputTensorCount() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public int getOutputIndex(String opName) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public Tensor getOutputTensor(int outputIndex) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void runSignature(
      Map<String, Object> inputs, Map<String, Object> outputs, String signatureKey) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void runSignature(Map<String, Object> inputs, Map<String, Object> outputs) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public Tensor getInputTensorFromSignature(String inputName, String signatureKey) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public String[] getSignatureKeys() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public String[] getSignatureInputs(String signatureKey) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public String[] getSignatureOutputs(String signatureKey) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public Tensor getOutputTensorFromSignature(String outputName, String signatureKey) {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public Long getLastNativeInferenceDurationNanoseconds() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }

  @Override
  public void close() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }
}
