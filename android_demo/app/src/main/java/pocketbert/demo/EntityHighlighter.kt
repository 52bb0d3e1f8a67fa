package pocketbert.demo

import android.text.SpannableStringBuilder
import android.text.Spanned
import android.text.style.BackgroundColorSpan
import pocketbert.core.ner.Entity

/** The input text with each entity's span in its type's colour; entity offsets are UTF-16, as Android's. */
object EntityHighlighter {
    private val known = mapOf(
        "PER" to 0xFFFFCDD2.toInt(),
        "ORG" to 0xFFBBDEFB.toInt(),
        "LOC" to 0xFFC8E6C9.toInt(),
        "MISC" to 0xFFFFF59D.toInt()
    )
    private val palette = intArrayOf(0xFFE1BEE7.toInt(), 0xFFFFE0B2.toInt(), 0xFFB2EBF2.toInt(), 0xFFD7CCC8.toInt())

    /** Colour of an entity type: fixed for CoNLL's four, a stable palette entry for any other. */
    fun color(type: String): Int = known[type] ?: palette[Math.floorMod(type.hashCode(), palette.size)]

    fun highlight(text: String, entities: List<Entity>): CharSequence {
        val out = SpannableStringBuilder(text)
        for (e in entities) {
            out.setSpan(BackgroundColorSpan(color(e.label())), e.startUtf16(), e.endUtf16(), Spanned.SPAN_EXCLUSIVE_EXCLUSIVE)
        }
        return out
    }
}
