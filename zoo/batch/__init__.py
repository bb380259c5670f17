"""Prediction past one machine, on Apache Beam (`zoo-batch-predict`): a `RunInference` model
handler for zoo exports (`handler`) and the pipeline that reads files of rows, predicts each and
writes the predictions, the rejected rows and a summary (`pipeline`). Needs the `beam` extra."""
