"""After training: metrics (`metrics`), the official SQuAD scorer (`squad_eval`), the span
search shared by evaluation and the export (`spans`), prediction files written as they are
computed (`predict`) and plots (`plots`)."""
