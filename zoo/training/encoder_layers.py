"""The depth of each encoder weight, for layer-wise learning rates and re-initialised top layers.

Two fine-tuning recipes for small data sets act on an encoder layer by layer:
- layer-wise learning-rate decay (`--layer_decay=D`, as ELECTRA and BEiT fine-tune): the top
  transformer layer learns at D times the rate, the one below at D^2, ..., the embeddings at
  D^(L+1) for L layers; the pooler and the head keep the full rate;
- re-initialising the top N transformer layers (`--reinit_layers=N`, "Revisiting Few-sample BERT
  Fine-tuning"): their weights drawn anew (truncated normal with standard deviation 0.02, biases
  0, layer norms 1 and 0) before the first step, since the top layers of a pretrained encoder
  are the most specific to its pretraining.

A weight's depth is read from its name: `transformer_<i>` (zoo-build-hub encoders) or
`layer_<i>` (TF Hub's BERT encoders) is layer i; `embedding` is below every layer; `pooler` is
above. An encoder whose names say none of this is refused by both settings.
"""
import re

import numpy as np
import tensorflow as tf

from zoo.base.errors import UsageError

_LAYER = re.compile(r"(?:^|/)(?:transformer|layer)_(\d+)/")


def depths(variables):
    """({id(variable): depth}, number of layers): depth 0 for embeddings, i + 1 for layer i,
    layers + 1 for the pooler and anything else; a `UsageError` when no weight names a layer."""
    layer_of = {}
    for v in variables:
        found = _LAYER.search(v.name)
        if found:
            layer_of[id(v)] = int(found.group(1))
    if not layer_of:
        raise UsageError("`layer_decay` and `reinit_layers` need an encoder whose weights name "
                         "their layer (transformer_<i>/ or layer_<i>/); this one's do not "
                         f"(e.g. {variables[0].name if variables else 'no weights'})")
    layers = max(layer_of.values()) + 1
    result = {}
    for v in variables:
        if id(v) in layer_of:
            result[id(v)] = layer_of[id(v)] + 1
        else:
            result[id(v)] = 0 if "embedding" in v.name else layers + 1
    return result, layers


def decayed_rates(variables, decay):
    """{id(variable): learning-rate multiplier} of the encoder's `variables` under layer-wise
    decay `decay` (in (0, 1]; 1: none)."""
    if not 0 < decay <= 1:
        raise UsageError(f"`layer_decay` must be in (0, 1], not {decay}")
    found, layers = depths(variables)
    return {key: decay ** (layers + 1 - depth) for key, depth in found.items()}


def reinitialize_top(variables, count, seed=0):
    """Draws the weights of the top `count` transformer layers among `variables` anew (see the
    module docstring); returns the names of the variables it changed."""
    found, layers = depths(variables)
    if count > layers:
        raise UsageError(f"`reinit_layers`={count}: the encoder has {layers} layers")
    rng = np.random.default_rng(seed)
    changed = []
    for v in variables:
        depth = found[id(v)]
        if not layers - count < depth <= layers or not v.dtype.is_floating:
            continue
        name = v.name.lower()
        if "gamma" in name or ("norm" in name and "scale" in name):
            value = np.ones(v.shape)
        elif "bias" in name or "beta" in name:
            value = np.zeros(v.shape)
        else:
            value = np.clip(rng.normal(0.0, 0.02, v.shape), -0.04, 0.04)
        v.assign(tf.constant(value, v.dtype))
        changed.append(v.name)
    return changed
