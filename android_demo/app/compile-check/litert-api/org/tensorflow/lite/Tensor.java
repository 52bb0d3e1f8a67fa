// Compile-only stand-in, never packaged: see android_demo/app/compile-check/README.md.
// Signatures as LiteRT's tflite/java/src/main/java/org/tensorflow/lite/Tensor.java,
// google-ai-edge/LiteRT, tag v1.4.1 (commit 7f1d217c77017e45e8696ff2d992b4f7b7025560); bodies throw.
package org.tensorflow.lite;

import java.nio.ByteBuffer;

/** A typed multi-dimensional array used in Tensorflow Lite. */
public interface Tensor {

  /** Quantization parameters that corresponds to the table, QuantizationParameters. */
  class QuantizationParams {
    public QuantizationParams(final float scale, final int zeroPoint) {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public float getScale() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }

    public int getZeroPoint() {
      throw new UnsupportedOperationException("compile-only stand-in");
    }
  }

  DataType dataType();

  int numDimensions();

  int numBytes();

  int numElements();

  int[] shape();

  int[] shapeSignature();

  int index();

  String name();

  QuantizationParams quantizationParams();

  ByteBuffer asReadOnlyBuffer();
}
