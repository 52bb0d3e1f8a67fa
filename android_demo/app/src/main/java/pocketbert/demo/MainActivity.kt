package pocketbert.demo

import android.app.Activity
import android.os.Bundle
import android.os.SystemClock
import android.text.SpannableStringBuilder
import android.text.Spanned
import android.text.style.BackgroundColorSpan
import android.widget.Button
import android.widget.EditText
import android.widget.RadioButton
import android.widget.TextView
import java.util.Locale
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import pocketbert.core.ner.Aggregation
import pocketbert.core.ner.Entity
import pocketbert.core.pipeline.Classification

/**
 * One screen: a text box, NER or classification, entities highlighted by type, labels with scores,
 * and the latency of each inference. Bundles load and run on one worker thread (a LiteRT interpreter
 * is not thread-safe); results are posted back to the UI thread.
 */
class MainActivity : Activity() {
    private val worker: ExecutorService = Executors.newSingleThreadExecutor()
    private var ner: LoadedBundle.Ner? = null
    private var classifier: LoadedBundle.Classifier? = null

    private lateinit var nerTask: RadioButton
    private lateinit var input: EditText
    private lateinit var run: Button
    private lateinit var latency: TextView
    private lateinit var highlighted: TextView
    private lateinit var results: TextView
    private lateinit var status: TextView

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        setContentView(R.layout.activity_main)
        nerTask = findViewById(R.id.task_ner)
        input = findViewById(R.id.input)
        run = findViewById(R.id.run)
        latency = findViewById(R.id.latency)
        highlighted = findViewById(R.id.highlighted)
        results = findViewById(R.id.results)
        status = findViewById(R.id.status)
        run.setOnClickListener { runOnce() }
        worker.execute { loadBundles() }
    }

    private fun loadBundles() {
        val loader = BundleLoader(assets, THREADS)
        val lines = mutableListOf<String>()
        val loadedNer = loadOne(lines, "NER", NER_DIR) { loader.load(NER_DIR, "ner") as LoadedBundle.Ner? }
        val loadedClassifier = loadOne(lines, "classification", CLASSIFICATION_DIR) {
            loader.load(CLASSIFICATION_DIR, "classification") as LoadedBundle.Classifier?
        }
        runOnUiThread {
            ner = loadedNer
            classifier = loadedClassifier
            status.text = lines.joinToString("\n")
            run.isEnabled = loadedNer != null || loadedClassifier != null
        }
    }

    private fun <T : LoadedBundle> loadOne(lines: MutableList<String>, task: String, dir: String, load: () -> T?): T? =
        try {
            load().also { lines += it?.describe() ?: getString(R.string.missing_bundle, task, dir) }
        } catch (e: RuntimeException) { // the core's BundleException/ModelException say what is wrong and the fix
            lines += "$task bundle unusable: ${e.message}"
            null
        }

    private fun runOnce() {
        val text = input.text.toString()
        val wantNer = nerTask.isChecked
        run.isEnabled = false
        worker.execute {
            val start = SystemClock.elapsedRealtimeNanos()
            val show: Runnable = try {
                if (wantNer) {
                    val bundle = ner ?: throw IllegalStateException(getString(R.string.missing_bundle, "NER", NER_DIR))
                    val entities = bundle.pipeline.run(text, Aggregation.SIMPLE)
                    Runnable { showEntities(text, entities) }
                } else {
                    val bundle = classifier ?: throw IllegalStateException(
                        getString(R.string.missing_bundle, "classification", CLASSIFICATION_DIR)
                    )
                    val classification = bundle.pipeline.classify(text)
                    Runnable { showLabels(text, classification) }
                }
            } catch (e: RuntimeException) { // InputException (e.g. a lone surrogate), or no bundle for this task
                Runnable { showError(e) }
            }
            val milliseconds = (SystemClock.elapsedRealtimeNanos() - start) / 1e6
            runOnUiThread {
                latency.text = getString(R.string.latency, milliseconds)
                show.run()
                run.isEnabled = true
            }
        }
    }

    private fun showEntities(text: String, entities: List<Entity>) {
        highlighted.text = EntityHighlighter.highlight(text, entities)
        val list = SpannableStringBuilder()
        for (e in entities) {
            val start = list.length
            list.append(String.format(Locale.ROOT, " %-5s ", e.label()))
            list.setSpan(BackgroundColorSpan(EntityHighlighter.color(e.label())), start, list.length,
                Spanned.SPAN_EXCLUSIVE_EXCLUSIVE)
            list.append(String.format(Locale.ROOT, " %.3f  %s  [%d, %d)\n", e.score(), e.word(), e.start(), e.end()))
        }
        results.text = if (entities.isEmpty()) "no entities" else list
    }

    private fun showLabels(text: String, classification: Classification) {
        highlighted.text = text
        results.text = buildString {
            for (label in classification.top(null)) {
                val bar = "█".repeat((label.score() * 20).toInt().coerceIn(0, 20))
                append(String.format(Locale.ROOT, "%-12s %.4f %s\n", label.label(), label.score(), bar))
            }
            if (classification.truncated()) append("(input truncated to the model's maximum length)\n")
        }
    }

    private fun showError(e: RuntimeException) {
        highlighted.text = ""
        results.text = e.message
    }

    override fun onDestroy() {
        worker.execute {
            ner?.close()
            classifier?.close()
        }
        worker.shutdown()
        super.onDestroy()
    }

    private companion object {
        const val NER_DIR = "ner"
        const val CLASSIFICATION_DIR = "classification"
        const val THREADS = 2
    }
}
