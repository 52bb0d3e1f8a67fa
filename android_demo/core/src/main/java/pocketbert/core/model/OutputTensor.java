package pocketbert.core.model;

import java.util.Arrays;

/**
 * A model output as the interpreter gives it: float32 values, or int8 values with the tensor's
 * quantisation (full-integer models). {@link #toFloats()} dequantises like the Python runtime,
 * {@code (q - zero_point) * scale} in float32, so a runner only copies bytes and the arithmetic stays
 * here, where it is tested.
 */
public final class OutputTensor {
    private final int[] shape;
    private final float[] floats;
    private final byte[] quantized;
    private final float scale;
    private final int zeroPoint;

    private OutputTensor(int[] shape, float[] floats, byte[] quantized, float scale, int zeroPoint) {
        long size = 1;
        for (int d : shape) {
            size *= d;
        }
        int length = floats != null ? floats.length : quantized.length;
        if (size != length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " needs " + size + " values, got "
                    + length);
        }
        this.shape = shape.clone();
        this.floats = floats;
        this.quantized = quantized;
        this.scale = scale;
        this.zeroPoint = zeroPoint;
    }

    public static OutputTensor float32(int[] shape, float[] values) {
        return new OutputTensor(shape, values, null, 0f, 0);
    }

    /** int8 values with the output tensor's quantisation parameters. */
    public static OutputTensor int8(int[] shape, byte[] values, float scale, int zeroPoint) {
        if (!(scale > 0f) || Float.isInfinite(scale)) {
            throw new IllegalArgumentException("an int8 output needs a positive scale, got " + scale
                    + " (is the tensor quantised?)");
        }
        return new OutputTensor(shape, null, values, scale, zeroPoint);
    }

    public int[] shape() {
        return shape.clone();
    }

    public boolean isQuantized() {
        return quantized != null;
    }

    /** The values in float32, row-major; int8 values dequantised. */
    public float[] toFloats() {
        if (floats != null) {
            return floats.clone();
        }
        float[] out = new float[quantized.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) (quantized[i] - zeroPoint) * scale;
        }
        return out;
    }
}
