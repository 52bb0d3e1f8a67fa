package pocketbert.demo

import pocketbert.core.bundle.Artifact
import pocketbert.core.bundle.Manifest
import pocketbert.core.model.ModelRunner
import pocketbert.core.pipeline.TextClassificationPipeline
import pocketbert.core.pipeline.TokenClassificationPipeline

/** A bundle from the app's assets, ready to run: its manifest, the chosen artifact and the task's pipeline. */
sealed class LoadedBundle(val manifest: Manifest, val artifact: Artifact, private val runner: ModelRunner) :
    AutoCloseable {

    class Ner(manifest: Manifest, artifact: Artifact, runner: ModelRunner, val pipeline: TokenClassificationPipeline) :
        LoadedBundle(manifest, artifact, runner)

    class Classifier(
        manifest: Manifest,
        artifact: Artifact,
        runner: ModelRunner,
        val pipeline: TextClassificationPipeline
    ) : LoadedBundle(manifest, artifact, runner)

    /** One line for the status area: what runs, and the manifest's notes (e.g. an untrained head). */
    fun describe(): String = buildString {
        append("${manifest.task()}: ${artifact.recipe()} (${artifact.file()}), buckets ${artifact.buckets()}, ")
        append("${manifest.labels().size} labels")
        for (note in manifest.notes()) append("\n  note: ").append(note)
    }

    override fun close() = runner.close()
}
