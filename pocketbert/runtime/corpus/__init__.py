"""Corpus-scale inference: stream a JSONL, CSV/TSV or Parquet file through a bundle, chunk by chunk.

    pocketbert-run BUNDLE --input reviews.jsonl --output labelled.jsonl [--text-field text] [--resume]
    pocketbert-run BUNDLE --input reviews.parquet --output labelled.parquet --ray [ADDRESS] --workers 4

Each output row is its input row with prediction columns added (``pred_label``/``pred_score``, or
``pred_entities``), in the input's format and order.  The modules, one idea each:

* :mod:`.formats`: which format a path is, and the chunk every reader yields;
* :mod:`.jsonl`, :mod:`.delimited`, :mod:`.parquet`: a chunked reader and an appending writer per format;
* :mod:`.predict`: rows' texts -> prediction columns (one definition for every engine);
* :mod:`.partial`: the partial output beside the output and its progress record (atomic finish, resume);
* :mod:`.job`: the streaming loop on one machine; :mod:`.ray_job`: the same job on Ray Data;
* :mod:`.batch_predictor`: the per-batch class Ray's ``map_batches`` and Spark's ``mapInPandas`` call.

Nothing here imports Ray, pandas or (for JSONL/CSV) pyarrow at module level: they are optional extras.
"""
