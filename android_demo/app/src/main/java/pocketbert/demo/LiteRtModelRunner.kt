package pocketbert.demo

import java.nio.ByteBuffer
import java.nio.ByteOrder
import org.tensorflow.lite.DataType
import org.tensorflow.lite.Interpreter
import pocketbert.core.ModelException
import pocketbert.core.model.IntTensor
import pocketbert.core.model.ModelRunner
import pocketbert.core.model.OutputTensor

/**
 * The core's [ModelRunner] on the LiteRT interpreter: one `seq_<length>` signature per bucket, int32
 * inputs fed by name through [Interpreter.runSignature], every output returned by name as the
 * interpreter produced it (float32, or int8 with the tensor's scale and zero point; the core
 * dequantises). Not thread-safe, like the interpreter: the app calls it from one worker thread.
 */
class LiteRtModelRunner(model: ByteBuffer, threads: Int) : ModelRunner {
    private val interpreter = Interpreter(model, Interpreter.Options().setNumThreads(threads))

    override fun signatureKeys(): Set<String> = interpreter.signatureKeys.toCollection(LinkedHashSet())

    override fun inputNames(signatureKey: String): List<String> = interpreter.getSignatureInputs(signatureKey).toList()

    override fun run(signatureKey: String, inputs: Map<String, IntTensor>): Map<String, OutputTensor> {
        val feeds = HashMap<String, Any>(inputs.size)
        for ((name, tensor) in inputs) {
            val expected = interpreter.getInputTensorFromSignature(name, signatureKey)
            if (expected.dataType() != DataType.INT32 || !expected.shape().contentEquals(tensor.shape())) {
                throw ModelException(
                    "input $name of $signatureKey is ${expected.dataType()} ${expected.shape().contentToString()}, " +
                        "not INT32 ${tensor.shape().contentToString()}",
                    "convert the model again with pocketbert (TFLite inputs are int32 [1, length])"
                )
            }
            val buffer = ByteBuffer.allocateDirect(4 * tensor.data().size).order(ByteOrder.nativeOrder())
            buffer.asIntBuffer().put(tensor.data())
            feeds[name] = buffer
        }
        val names = interpreter.getSignatureOutputs(signatureKey)
        val outputs = HashMap<String, Any>(names.size)
        for (name in names) {
            val tensor = interpreter.getOutputTensorFromSignature(name, signatureKey)
            outputs[name] = ByteBuffer.allocateDirect(tensor.numElements() * bytesPerElement(tensor.dataType(), name))
                .order(ByteOrder.nativeOrder())
        }
        interpreter.runSignature(feeds, outputs, signatureKey)
        return names.asList().associateWith { name -> read(signatureKey, name, outputs.getValue(name) as ByteBuffer) }
    }

    private fun read(signatureKey: String, name: String, buffer: ByteBuffer): OutputTensor {
        val tensor = interpreter.getOutputTensorFromSignature(name, signatureKey)
        buffer.rewind()
        return when (tensor.dataType()) {
            DataType.FLOAT32 -> {
                val values = FloatArray(tensor.numElements())
                buffer.asFloatBuffer().get(values)
                OutputTensor.float32(tensor.shape(), values)
            }
            DataType.INT8 -> {
                val values = ByteArray(tensor.numElements())
                buffer.get(values)
                val quantization = tensor.quantizationParams()
                OutputTensor.int8(tensor.shape(), values, quantization.scale, quantization.zeroPoint)
            }
            else -> throw unsupported(tensor.dataType(), name)
        }
    }

    private fun bytesPerElement(type: DataType, name: String): Int = when (type) {
        DataType.FLOAT32 -> 4
        DataType.INT8 -> 1
        else -> throw unsupported(type, name)
    }

    private fun unsupported(type: DataType, name: String) = ModelException(
        "output $name is $type; the pipelines read float32 or int8 logits",
        "convert the model again with pocketbert"
    )

    override fun close() = interpreter.close()
}
