// Compile-only stand-in, never packaged: see android_demo/app/compile-check/README.md.
// Signatures as LiteRT's tflite/java/src/main/java/org/tensorflow/lite/DataType.java,
// google-ai-edge/LiteRT, tag v1.4.1 (commit 7f1d217c77017e45e8696ff2d992b4f7b7025560); bodies throw.
// Left out: the constants' package-private native codes (the constructor's argument and c()).
package org.tensorflow.lite;

/** Represents the type of elements in a TensorFlow Lite Tensor as an enum. */
public enum DataType {
  FLOAT32,
  INT32,
  UINT8,
  INT64,
  STRING,
  BOOL,
  INT16,
  INT8;

  public int byteSize() {
    throw new UnsupportedOperationException("compile-only stand-in");
  }
}
