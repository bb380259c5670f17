"""Data in: readers of CSV / TSV / JSONL / TFRecord files, TFDS, SQuAD JSON and CoNLL
(`text_files`, `sources`, `tfds_source`, `squad`, `conll`), labels and their names (`labels`),
the tf.data pipelines that tokenize in the graph (`pipeline`), windows over long texts
(`windows`, `squad_windows`, `tagging`), data checks (`check`) and fingerprints (`fingerprint`).
"""
