package pocketbert.core.model;

import java.util.Arrays;

/** An int32 input tensor: row-major data and its shape (here always {@code [1, sequence]}). */
public final class IntTensor {
    private final int[] shape;
    private final int[] data;

    public IntTensor(int[] shape, int[] data) {
        long size = 1;
        for (int d : shape) {
            size *= d;
        }
        if (size != data.length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " needs " + size + " values, got "
                    + data.length);
        }
        this.shape = shape.clone();
        this.data = data;
    }

    /** A batch of one row: shape {@code [1, values.length]}. */
    public static IntTensor row(int[] values) {
        return new IntTensor(new int[] {1, values.length}, values);
    }

    public int[] shape() {
        return shape.clone();
    }

    /** The values, row-major (not copied: runners read them, nobody writes them). */
    public int[] data() {
        return data;
    }
}
