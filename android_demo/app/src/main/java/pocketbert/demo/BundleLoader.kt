package pocketbert.demo

import android.content.res.AssetManager
import java.io.FileInputStream
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import pocketbert.core.BundleException
import pocketbert.core.bundle.Consistency
import pocketbert.core.bundle.Integrity
import pocketbert.core.bundle.Manifest
import pocketbert.core.pipeline.Pipelines
import pocketbert.core.text.Vocabulary
import pocketbert.core.text.WordPieceTokenizer

/**
 * Loads a bundle that copy_bundle.sh put into `assets/<dir>/` (manifest.json, vocab.txt, labels.txt and
 * one .tflite model), checking it as the Python runtime checks a bundle directory: schema version,
 * sizes and SHA-256 of the files it uses, labels.txt against the manifest, the vocabulary and the
 * model against each other (the core's load-time probe).
 */
class BundleLoader(private val assets: AssetManager, private val threads: Int) {

    /**
     * The bundle in `assets/<dir>` (a [LoadedBundle.Ner] for task `ner`, a [LoadedBundle.Classifier] for
     * `classification`), or null if there is none. Throws the core's exceptions if it is unusable.
     */
    fun load(dir: String, task: String): LoadedBundle? {
        val files = assets.list(dir)?.toSet().orEmpty()
        if (MANIFEST !in files) return null
        val manifest = Manifest.parse(assets.open("$dir/$MANIFEST").use { it.readBytes().toString(Charsets.UTF_8) })
        if (manifest.task() != task) {
            throw BundleException(
                "assets/$dir holds a ${manifest.task()} bundle, not $task",
                "copy bundles with android_demo/copy_bundle.sh, which puts each in the folder of its task"
            )
        }
        val artifact = manifest.chooseArtifact("tflite", files, null)
        val settings = manifest.tokenizer()
        for (file in listOf(settings.vocabFile(), LABELS, artifact.file())) {
            assets.open("$dir/$file").use { Integrity.verify(manifest, file, it) }
        }
        // labels.txt and vocab.txt (verified just above) against the manifest, as every core loader checks
        Consistency.check(manifest) { name ->
            if (name in files && manifest.files().containsKey(name)) assets.open("$dir/$name").use { it.readBytes() } else null
        }
        val vocabulary = assets.open("$dir/${settings.vocabFile()}").use { Vocabulary.read(it) }
        val tokenizer = WordPieceTokenizer(vocabulary, settings)
        val runner = LiteRtModelRunner(mapAsset("$dir/${artifact.file()}"), threads)
        try {
            return when (manifest.task()) {
                "ner" -> LoadedBundle.Ner(manifest, artifact, runner, Pipelines.ner(manifest, artifact, tokenizer, runner))
                else -> LoadedBundle.Classifier(
                    manifest, artifact, runner, Pipelines.classifier(manifest, artifact, tokenizer, runner)
                )
            }
        } catch (e: RuntimeException) {
            runner.close()
            throw e
        }
    }

    /** Memory-maps an asset stored uncompressed (app/build.gradle.kts: noCompress "tflite"). */
    private fun mapAsset(path: String): ByteBuffer =
        assets.openFd(path).use { descriptor ->
            FileInputStream(descriptor.fileDescriptor).use { stream ->
                stream.channel.map(FileChannel.MapMode.READ_ONLY, descriptor.startOffset, descriptor.declaredLength)
            }
        }

    private companion object {
        const val MANIFEST = "manifest.json"
        const val LABELS = "labels.txt"
    }
}
