package pocketbert.core.pipeline;

import java.util.Arrays;
import pocketbert.core.BundleException;
import pocketbert.core.ModelException;
import pocketbert.core.bundle.Artifact;
import pocketbert.core.bundle.Manifest;
import pocketbert.core.model.ModelRunner;
import pocketbert.core.text.Encoding;
import pocketbert.core.text.WordPieceTokenizer;

/**
 * Builds a bundle's pipeline and checks, before the first text, that its parts belong together, as
 * the Python runtime's {@code load} does: the vocabulary size is the manifest's (and fits the model's
 * embedding table, {@code model_vocab_size}), the model's
 * signatures are the artifact's buckets and take the manifest's inputs, and one probe run on
 * {@code [CLS] <highest id> [SEP]} proves that every id fits the embeddings and that the model
 * returns one logit per label.
 */
public final class Pipelines {
    private Pipelines() {
    }

    public static TokenClassificationPipeline ner(Manifest manifest, Artifact artifact, WordPieceTokenizer tokenizer,
                                                  ModelRunner runner) {
        requireTask(manifest, "ner");
        BucketedModel model = open(manifest, artifact, tokenizer, runner, true);
        return new TokenClassificationPipeline(tokenizer, model, manifest.labels(), maxLength(manifest, model));
    }

    public static TextClassificationPipeline classifier(Manifest manifest, Artifact artifact,
                                                        WordPieceTokenizer tokenizer, ModelRunner runner) {
        requireTask(manifest, "classification");
        BucketedModel model = open(manifest, artifact, tokenizer, runner, false);
        return new TextClassificationPipeline(tokenizer, model, manifest.labels(), manifest.problemType(),
                maxLength(manifest, model));
    }

    /**
     * The bundle's input length (the same in every runtime and backend); the model's largest bucket only
     * limits a hand-written manifest that lists no buckets.
     */
    static int maxLength(Manifest manifest, BucketedModel model) {
        return Math.min(manifest.inputLength(), model.buckets().largest());
    }

    private static void requireTask(Manifest manifest, String task) {
        if (!manifest.task().equals(task)) {
            throw new BundleException("the bundle is a " + manifest.task() + " model, not " + task,
                    "open it with the " + manifest.task() + " pipeline");
        }
    }

    private static BucketedModel open(Manifest manifest, Artifact artifact, WordPieceTokenizer tokenizer,
                                      ModelRunner runner, boolean perToken) {
        Integer expected = manifest.tokenizer().vocabSize();
        int size = tokenizer.vocabulary().size();
        if (expected != null && size != expected) {
            throw new ModelException("vocab.txt has " + size + " tokens but the model was converted with a " + expected
                    + "-token vocabulary: the tokenizer does not belong to this model",
                    "copy vocab.txt from the same bundle");
        }
        Integer rows = manifest.modelVocabSize();
        if (rows != null && size > rows) {
            throw new ModelException("vocab.txt has " + size + " tokens but the model's embedding table has " + rows
                    + " rows: ids from " + rows + " on would fail", "copy vocab.txt from the same bundle");
        }
        BucketedModel model = BucketedModel.open(runner, manifest.inputNames(), manifest.labels().size(), perToken);
        if (!artifact.buckets().isEmpty() && !artifact.buckets().equals(model.buckets().lengths())) {
            throw new ModelException(artifact.file() + " has buckets " + model.buckets().lengths()
                    + " but the manifest lists " + artifact.buckets(), "copy the bundle again");
        }
        probe(model, tokenizer, artifact);
        checkLimits(model, tokenizer, artifact, maxLength(manifest, model));
        return model;
    }

    /**
     * The pad id and the input length against the model's own tables, as the Python runtime checks them at
     * load: out of range, they would fail only at the first batch that pads or the first long text.
     */
    private static void checkLimits(BucketedModel model, WordPieceTokenizer tokenizer, Artifact artifact, int length) {
        int pad = tokenizer.padId();
        try {
            model.run(tokenizer.encodeIds(pad));
        } catch (RuntimeException e) {
            throw new ModelException("the bundle's pad token id " + pad + " is outside the embedding table of "
                    + artifact.file(), "the manifest's tokenizer.special_tokens.pad does not belong to this model; "
                    + "copy the bundle again", e);
        }
        int[] pads = new int[length - 2];
        Arrays.fill(pads, pad);
        try {
            model.run(tokenizer.encodeIds(pads));
        } catch (RuntimeException e) {
            throw new ModelException(artifact.file() + " cannot take " + length + " tokens, the bundle's input "
                    + "length", "copy the bundle again", e);
        }
    }

    private static void probe(BucketedModel model, WordPieceTokenizer tokenizer, Artifact artifact) {
        int top = tokenizer.vocabulary().size() - 1;
        try {
            model.run(probeRow(tokenizer, top));
        } catch (ModelException e) {
            throw e; // wrong output shape or name: already says what is wrong
        } catch (RuntimeException e) {
            try {
                model.run(probeRow(tokenizer, -1));
            } catch (RuntimeException plain) {
                throw new ModelException(artifact.file() + " fails to run: " + plain.getMessage(),
                        "the model file is damaged or does not match the manifest; copy the bundle again", plain);
            }
            throw new ModelException("the vocabulary has " + (top + 1) + " tokens but " + artifact.file()
                    + " rejects token id " + top + ": the tokenizer and the model do not belong together",
                    "copy vocab.txt from the same bundle", e);
        }
    }

    /** {@code [CLS] id [SEP]}, or {@code [CLS] [SEP]} for id -1. */
    private static Encoding probeRow(WordPieceTokenizer tokenizer, int id) {
        return id < 0 ? tokenizer.encodeIds() : tokenizer.encodeIds(id);
    }
}
