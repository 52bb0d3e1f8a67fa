"""One class for distributed engines: a batch of rows in, the same rows with prediction columns out.

    ds.map_batches(BatchPredictor, fn_constructor_kwargs={"bundle": path, "settings": {...}},
                   batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=4))    # Ray Data
    df.mapInPandas(spark_function(path, {...}), schema=...)                                # Spark

The bundle is loaded once per process (a Ray actor, a Spark Python worker) and every batch after that
only runs the model.  Batches are Arrow tables (Ray's ``batch_format="pyarrow"``) or pandas DataFrames
(Ray's ``"pandas"``, Spark's ``mapInPandas``).  Bad rows (no usable text) either raise, are dropped
(``bad_rows="skip"``), or are kept with null predictions and the reason in ``<prefix>error``
(``"mark"``, what ``pocketbert-run --ray`` uses so that the driver lists them).
"""

from __future__ import annotations

from .formats import CorpusError
from .predict import Predictor, Settings, row_problems

BAD_ROWS = ("raise", "skip", "mark")
SPARK_TYPES = {"string": "string", "float": "double", "ranked": "array<struct<label:string,score:double>>",
               "entities": "array<struct<entity_group:string,score:double,word:string,start:bigint,end:bigint>>",
               "tokens": "array<struct<entity:string,score:double,index:bigint,word:string,start:bigint,end:bigint>>"}


class BatchPredictor:
    def __init__(self, bundle: str, settings: Settings | dict | None = None, bad_rows: str = "raise"):
        if bad_rows not in BAD_ROWS:
            raise ValueError(f"bad_rows must be one of {BAD_ROWS}, not {bad_rows!r}")
        settings = Settings(**settings) if isinstance(settings, dict) else settings or Settings()
        self.predictor = Predictor.load(bundle, settings)
        self.settings, self.bad_rows = settings, bad_rows
        self.error_column = f"{settings.prefix}error"

    def spark_ddl(self) -> str:
        """The prediction columns as Spark DDL, to append to the input's schema for ``mapInPandas``."""
        columns = [f"{name} {SPARK_TYPES[kind]}" for name, kind in self.predictor.kinds.items()]
        return ", ".join(columns + ([f"{self.error_column} string"] if self.bad_rows == "mark" else []))

    def __call__(self, batch):
        if hasattr(batch, "iloc"):  # a pandas DataFrame
            columns = {name: batch[name].tolist() for name in self._fields(batch.columns)}
            return self._pandas(batch, *self._predict(columns))
        columns = {name: batch.column(name).to_pylist() for name in self._fields(batch.column_names)}
        return self._arrow(batch, *self._predict(columns))

    def _fields(self, names) -> list[str]:
        wanted = [self.settings.text_field] + ([self.settings.pair_field] if self.settings.pair_field else [])
        missing = [f for f in wanted if f not in list(names)]
        if missing:
            raise CorpusError(f"the batch has no column {missing[0]!r} (its columns: {', '.join(map(str, names))})",
                              "name the column holding the text with --text-field (and --pair-field)")
        return wanted

    def _predict(self, columns: dict[str, list]) -> tuple[list[int], dict[str, list], dict[int, str]]:
        """(rows kept, predictions of the rows with a usable text, bad row -> reason)."""
        texts = columns[self.settings.text_field]
        pairs = columns.get(self.settings.pair_field) if self.settings.pair_field else None
        bad = row_problems(texts, pairs, self.settings)
        if bad and self.bad_rows == "raise":
            i = min(bad)
            raise CorpusError(f"row {i + 1} of a batch: {bad[i]}", "fix the row, or skip bad rows (bad_rows='skip')")
        good = [i for i in range(len(texts)) if i not in bad]
        predictions = self.predictor.predict([texts[i] for i in good], None if pairs is None else
                                             [pairs[i] for i in good])
        if self.bad_rows == "skip":
            return good, predictions, {}
        full = {name: [None] * len(texts) for name in predictions}  # mark: every row, nulls where bad
        for name, values in predictions.items():
            for i, value in zip(good, values):
                full[name][i] = value
        return list(range(len(texts))), full, bad

    def _arrow(self, table, keep, predictions, bad):
        import pyarrow as pa

        from .parquet import arrow_type

        if len(keep) != table.num_rows:
            table = table.take(pa.array(keep, type=pa.int64()))
        for name, kind in self.predictor.kinds.items():
            table = table.append_column(name, pa.array(predictions[name], type=arrow_type(kind)))
        if self.bad_rows == "mark":
            table = table.append_column(self.error_column, pa.array([bad.get(i) for i in keep], type=pa.string()))
        return table

    def _pandas(self, frame, keep, predictions, bad):
        frame = frame.iloc[keep].copy() if len(keep) != len(frame) else frame.copy()
        for name in self.predictor.kinds:
            frame[name] = predictions[name]
        if self.bad_rows == "mark":
            frame[self.error_column] = [bad.get(i) for i in keep]
        return frame


_WORKER: dict = {}  # one BatchPredictor per Spark Python worker process and bundle


def spark_function(bundle: str, settings: Settings | dict | None = None, bad_rows: str = "raise"):
    """A function for Spark's ``DataFrame.mapInPandas``: the bundle loads on a worker's first batch."""
    def predict(frames):
        key = (bundle, repr(settings), bad_rows)
        if key not in _WORKER:
            _WORKER[key] = BatchPredictor(bundle, settings, bad_rows)
        for frame in frames:
            yield _WORKER[key](frame)
    return predict
