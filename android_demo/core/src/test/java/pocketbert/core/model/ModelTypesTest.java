package pocketbert.core.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import pocketbert.core.InputException;
import pocketbert.core.ModelException;

class ModelTypesTest {
    @Test
    void int8OutputsAreDequantisedInFloat32LikeThePythonRuntime() {
        byte[] q = {-128, -1, 0, 3, 127};
        float scale = 0.0026058624f;
        OutputTensor t = OutputTensor.int8(new int[] {1, 5}, q, scale, 3);
        assertTrue(t.isQuantized());
        float[] got = t.toFloats();
        for (int i = 0; i < q.length; i++) {
            assertEquals((float) (q[i] - 3) * scale, got[i], 0f);
        }
        assertEquals(0f, got[3], 0f);
        assertEquals(-131 * scale, got[0], 1e-7f);
        assertThrows(IllegalArgumentException.class, () -> OutputTensor.int8(new int[] {1, 5}, q, 0f, 0),
                "an unquantised tensor reports scale 0");
        assertThrows(IllegalArgumentException.class, () -> OutputTensor.int8(new int[] {1, 4}, q, 1f, 0));
    }

    @Test
    void floatOutputsAndInputsKeepTheirShape() {
        OutputTensor t = OutputTensor.float32(new int[] {1, 2, 3}, new float[6]);
        assertFalse(t.isQuantized());
        assertArrayEquals(new int[] {1, 2, 3}, t.shape());
        assertThrows(IllegalArgumentException.class, () -> OutputTensor.float32(new int[] {1, 2}, new float[3]));
        IntTensor row = IntTensor.row(new int[] {101, 7, 102});
        assertArrayEquals(new int[] {1, 3}, row.shape());
        assertThrows(IllegalArgumentException.class, () -> new IntTensor(new int[] {2, 2}, new int[3]));
    }

    @Test
    void bucketsComeFromSeqSignaturesAndTheSmallestThatFitsIsChosen() {
        SequenceBuckets b = SequenceBuckets.of(Arrays.asList("seq_64", "seq_16", "serving_default", "seq_x"));
        assertEquals(Arrays.asList(16, 64), b.lengths());
        assertEquals(16, b.bucketFor(1));
        assertEquals(16, b.bucketFor(16));
        assertEquals(64, b.bucketFor(17));
        assertEquals(64, b.largest());
        assertEquals("seq_64", SequenceBuckets.signatureKey(64));
        InputException tooLong = assertThrows(InputException.class, () -> b.bucketFor(65));
        assertTrue(tooLong.problem().contains("longer than the largest bucket (64)"));
        ModelException none = assertThrows(ModelException.class,
                () -> SequenceBuckets.of(Arrays.asList("serving_default")));
        assertTrue(none.problem().contains("expected seq_<length> signatures"), none.problem());
    }
}
