"""Building TF Hub-format BERT models offline: a Hugging Face checkpoint read
(`checkpoint`), the encoder (`encoder`, `layers`) and preprocessor (`preprocessor`) written as
SavedModels with the interface of tfhub.dev's BERT models (`build`)."""
