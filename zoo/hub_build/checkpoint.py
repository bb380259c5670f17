"""Reading a BERT checkpoint folder and mapping its weights onto `BertEncoder`.

Two layouts are read:
- Hugging Face: `config.json`, `model.safetensors`, `vocab.txt` and usually
  `tokenizer_config.json` (which says whether the vocabulary is lower-cased); or, for the XLM-R
  family (model_type `xlm-roberta`, or a BERT such as multilingual-e5-small with XLM-R's
  tokenizer), `sentencepiece.bpe.model` instead of `vocab.txt`. XLM-R's position embeddings
  start after its padding id (`pad_token_id` + 1 rows that no position reads): they are dropped,
  so positions count from 0 as BERT's do; its single token type is the one every input gets;
- Google's original TF release (`uncased_L-12_H-768_A-12`, `multi_cased_L-12_H-768_A-12`, ...):
  `bert_config.json`, `vocab.txt` and the TF checkpoint `bert_model.ckpt.*`. Its "gelu" is the
  tanh approximation (Google's `modeling.gelu`); whether it is lower-cased comes from the folder
  name, as Google's names say it (`uncased` / `cased`), unless given.
Every problem is reported as `CheckpointError` naming the folder or file and what is wrong.
"""
import glob
import dataclasses
import json
import os

import numpy as np

from zoo.hub_build.encoder import BertConfig


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be turned into a Hub-format BERT model."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint folder holds, validated."""

    path: str
    config: BertConfig
    vocab_file: str
    do_lower_case: bool
    weights_file: str  # model.safetensors, or the TF checkpoint's prefix (Google's layout)
    layout: str = "huggingface"  # or "google"
    tokenizer: str = "wordpiece"  # or "sentencepiece": vocab_file is sentencepiece.bpe.model
    position_offset: int = 0  # rows of the position embeddings before position 0 (XLM-R: 2)


SENTENCEPIECE_FILE = "sentencepiece.bpe.model"


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None


def _bert_config(path, raw):
    model_type = raw.get("model_type", "bert")
    if model_type not in ("bert", "xlm-roberta"):
        raise CheckpointError(
            f"{path}: model_type is {model_type!r}; zoo-build-hub converts BERT checkpoints "
            "(model_type 'bert') and XLM-R ones ('xlm-roberta') only")
    if model_type == "xlm-roberta":
        raw = dict(raw, max_position_embeddings=raw.get("max_position_embeddings", 0)
                   - position_offset(raw))
    position_type = raw.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{path}: position_embedding_type is {position_type!r}; only 'absolute' position "
            "embeddings are supported (the TF Hub BERT interface has no relative positions)")
    fields = {f.name for f in dataclasses.fields(BertConfig)}
    missing = sorted({"vocab_size", "hidden_size", "num_hidden_layers",
                      "num_attention_heads", "intermediate_size"} - raw.keys())
    if missing:
        raise CheckpointError(f"{path}: missing BERT config keys {missing}")
    try:
        return BertConfig(**{k: v for k, v in raw.items() if k in fields})
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: {e}") from None


def position_offset(raw_config):
    """Rows of an XLM-R model's position embeddings before position 0 (0 for BERT)."""
    if raw_config.get("model_type") != "xlm-roberta":
        return 0
    return raw_config.get("pad_token_id", 1) + 1


def _sentencepiece_file(folder, config):
    """The folder's `sentencepiece.bpe.model`, checked against the config's vocab_size."""
    from zoo.hub_build import sentencepiece_model
    path = os.path.join(folder, SENTENCEPIECE_FILE)
    pieces = sentencepiece_model.fairseq_size(path)
    if pieces > config.vocab_size:
        raise CheckpointError(
            f"{path}: {pieces} pieces with XLM-R's special tokens, but config.json says "
            f"vocab_size {config.vocab_size}")
    return path


def _do_lower_case(folder, override, google=False):
    if override is not None:
        return bool(override)
    tokenizer_config = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(tokenizer_config):
        value = _read_json(tokenizer_config).get("do_lower_case")
        if value is not None:
            return bool(value)
    name = os.path.basename(os.path.normpath(folder)).lower()
    if google and ("uncased" in name or "cased" in name):
        return "uncased" in name
    raise CheckpointError(
        f"{folder}: cannot tell whether the vocabulary is lower-cased (no do_lower_case in "
        "tokenizer_config.json); pass do_lower_case explicitly (--do_lower_case / --nodo_lower_case)")


def _vocab_file(folder, config, config_name="config.json"):
    vocab_file = os.path.join(folder, "vocab.txt")
    if not os.path.exists(vocab_file):
        raise CheckpointError(f"{folder}: no vocab.txt (a WordPiece vocabulary) and no "
                              f"{SENTENCEPIECE_FILE} (XLM-R's SentencePiece one)")
    with open(vocab_file, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    if vocab_size != config.vocab_size:
        raise CheckpointError(
            f"{vocab_file}: {vocab_size} tokens, but {config_name} says vocab_size "
            f"{config.vocab_size}")
    return vocab_file


def _read_google(folder, do_lower_case):
    config_path = os.path.join(folder, "bert_config.json")
    raw = dict(_read_json(config_path))
    if raw.get("hidden_act", "gelu") == "gelu":
        raw["hidden_act"] = "gelu_new"  # Google's gelu is the tanh approximation
    config = _bert_config(config_path, raw)
    indexes = sorted(glob.glob(os.path.join(folder, "*.ckpt.index")))
    if not indexes:
        raise CheckpointError(f"{folder}: bert_config.json but no TF checkpoint "
                              "(bert_model.ckpt.index and its data files)")
    return Checkpoint(path=folder, config=config,
                      vocab_file=_vocab_file(folder, config, "bert_config.json"),
                      do_lower_case=_do_lower_case(folder, do_lower_case, google=True),
                      weights_file=indexes[0][:-len(".index")], layout="google")


def sentence_pooling(folder):
    """The sentence vector a checkpoint was trained to give, from sentence-transformers'
    `1_Pooling/config.json` beside it: "mean" or "cls"; "cls" when the folder has no such file
    (a plain BERT checkpoint, whose pooler on [CLS] was trained by next-sentence prediction)."""
    path = os.path.join(folder, "1_Pooling", "config.json")
    if not os.path.exists(path):
        return "cls"
    config = _read_json(path)
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
    raise CheckpointError(f"{path}: pooling {', '.join(modes) or '(none)'} is not one zoo has "
                          "(mean tokens or the CLS token)")


def read_checkpoint(folder, do_lower_case=None) -> Checkpoint:
    """Validates a BERT checkpoint folder (Hugging Face's or Google's layout) and returns what
    it holds."""
    if not os.path.isdir(folder):
        raise CheckpointError(f"{folder}: not a directory")
    config_path = os.path.join(folder, "config.json")
    if not os.path.exists(config_path):
        if os.path.exists(os.path.join(folder, "bert_config.json")):
            return _read_google(folder, do_lower_case)
        raise CheckpointError(f"{folder}: no config.json (expected a Hugging Face BERT checkpoint) "
                              "and no bert_config.json (a Google BERT checkpoint)")
    raw = _read_json(config_path)
    config = _bert_config(config_path, raw)
    sentencepiece = not os.path.exists(os.path.join(folder, "vocab.txt")) and os.path.exists(
        os.path.join(folder, SENTENCEPIECE_FILE))
    if raw.get("model_type") == "xlm-roberta" and not sentencepiece:
        raise CheckpointError(f"{folder}: an XLM-R checkpoint without {SENTENCEPIECE_FILE}")
    vocab_file = (_sentencepiece_file(folder, config) if sentencepiece
                  else _vocab_file(folder, config))
    weights_file = os.path.join(folder, "model.safetensors")
    if not os.path.exists(weights_file):
        hint = (" (pytorch_model.bin found: convert it to model.safetensors first)"
                if os.path.exists(os.path.join(folder, "pytorch_model.bin")) else "")
        raise CheckpointError(f"{folder}: no model.safetensors weights{hint}")
    return Checkpoint(path=folder, config=config, vocab_file=vocab_file,
                      do_lower_case=False if sentencepiece else _do_lower_case(folder,
                                                                                do_lower_case),
                      weights_file=weights_file,
                      tokenizer="sentencepiece" if sentencepiece else "wordpiece",
                      position_offset=position_offset(raw))


def _names(config: BertConfig):
    """Yields (our variable path, HF tensor name, Google variable name, whether HF stores it
    transposed) for every encoder weight."""
    def names(theirs):  # "encoder/layer.3/output/dense": HF's and Google's spelling
        return theirs.replace("/", "."), "bert/" + theirs.replace("layer.", "layer_")

    def dense(ours, theirs):
        hf, google = names(theirs)
        yield f"{ours}/kernel", f"{hf}.weight", f"{google}/kernel", True
        yield f"{ours}/bias", f"{hf}.bias", f"{google}/bias", False

    def layer_norm(ours, theirs):
        hf, google = names(theirs)
        yield f"{ours}/gamma", f"{hf}.weight", f"{google}/gamma", False
        yield f"{ours}/beta", f"{hf}.bias", f"{google}/beta", False

    for ours, hf, google in (("word_embeddings", "word_embeddings", "word_embeddings"),
                             ("position_embeddings", "position_embeddings",
                              "position_embeddings"),
                             ("type_embeddings", "token_type_embeddings",
                              "token_type_embeddings")):
        yield f"embeddings/{ours}", f"embeddings.{hf}.weight", f"bert/embeddings/{google}", False
    yield from layer_norm("embeddings/layer_norm", "embeddings/LayerNorm")
    for i in range(config.num_hidden_layers):
        ours = f"transformer_{i}"
        theirs = f"encoder/layer.{i}"
        for name in ("query", "key", "value"):
            yield from dense(f"{ours}/{name}", f"{theirs}/attention/self/{name}")
        yield from dense(f"{ours}/attention_output", f"{theirs}/attention/output/dense")
        yield from layer_norm(f"{ours}/attention_layer_norm",
                              f"{theirs}/attention/output/LayerNorm")
        yield from dense(f"{ours}/intermediate", f"{theirs}/intermediate/dense")
        yield from dense(f"{ours}/output", f"{theirs}/output/dense")
        yield from layer_norm(f"{ours}/output_layer_norm", f"{theirs}/output/LayerNorm")
    yield from dense("pooler", "pooler/dense")


def _lookup(tensors, name):
    """Finds an HF tensor under its plain name, a `bert.` prefix, or old gamma/beta names."""
    candidates = [name, f"bert.{name}", f"roberta.{name}"]
    if name.endswith("LayerNorm.weight"):
        candidates += [c.replace("LayerNorm.weight", "LayerNorm.gamma") for c in candidates]
    if name.endswith("LayerNorm.bias"):
        candidates += [c.replace("LayerNorm.bias", "LayerNorm.beta") for c in candidates]
    return next((c for c in candidates if c in tensors), None)


def _tensors(checkpoint):
    """{name: array getter} of a checkpoint's weights file."""
    if checkpoint.layout == "google":
        import tensorflow as tf
        try:
            reader = tf.train.load_checkpoint(checkpoint.weights_file)
        except (tf.errors.OpError, ValueError) as e:
            raise CheckpointError(f"{checkpoint.weights_file}: cannot be read: "
                                  f"{str(e).splitlines()[0]}") from None
        return {name: (lambda name=name: reader.get_tensor(name))
                for name in reader.get_variable_to_shape_map()}
    from safetensors.numpy import load_file
    try:
        tensors = load_file(checkpoint.weights_file)
    except Exception as e:  # safetensors raises its own error types
        raise CheckpointError(f"{checkpoint.weights_file}: cannot be read: {e}") from None
    return {name: (lambda value=value: value) for name, value in tensors.items()}


def load_weights(encoder_layer, checkpoint: Checkpoint):
    """Assigns the checkpoint's weights to a built `BertEncoder` layer."""
    assign_weights(encoder_layer, checkpoint.config, _tensors(checkpoint),
                   checkpoint.weights_file, google=checkpoint.layout == "google",
                   position_offset=checkpoint.position_offset,
                   # XLM-R's masked-LM checkpoints have no pooler
                   optional=("pooler",) if checkpoint.tokenizer == "sentencepiece" else ())


def assign_weights(encoder_layer, config, tensors, where, google=False, optional=(),
                   position_offset=0):
    """Assigns `tensors` ({Hugging Face name, or Google's with `google`: array getter}) to a
    built `BertEncoder` layer; `where` names their file in errors. Weights under the prefixes
    `optional` (e.g. "pooler") keep their initial values when absent; the first
    `position_offset` rows of the position embeddings are dropped."""
    prefix = encoder_layer.name + "/"
    variables = {v.name.split(":")[0].split(prefix, 1)[-1]: v for v in encoder_layer.weights}
    missing = []
    for ours, hf, google_name, transpose in _names(config):
        theirs = google_name if google else hf
        key = (theirs if theirs in tensors else None) if google else _lookup(tensors, theirs)
        if key is None:
            if not ours.startswith(tuple(optional)):
                missing.append(theirs)
            continue
        value = np.asarray(tensors[key](), dtype=np.float32)
        value = value.T if transpose and not google else value
        if ours == "embeddings/position_embeddings":
            value = value[position_offset:]
        variable = variables[ours]
        if tuple(variable.shape) != value.shape:
            raise CheckpointError(
                f"{where}: {key} has shape {value.shape}, "
                f"expected {tuple(variable.shape)} from config.json")
        variable.assign(value)
    if missing:
        raise CheckpointError(
            f"{where}: missing {len(missing)} BERT weights, e.g. {missing[:3]}")
