"""Encoder weights by depth: layer-wise learning rates and re-initialised top layers."""
import numpy as np
import pytest
import tensorflow as tf

from zoo.base.errors import UsageError
from zoo.base.fields import group_of
from zoo.model import hub
from zoo.model.cores import classifier_core, encoder_variables
from zoo.run.settings import RunSettings
from zoo.training import encoder_layers
from zoo.training.optimizer import optimizer_for


@pytest.fixture(scope="module")
def core(tiny_hub):
    return classifier_core(hub.encoder_layer(tiny_hub + "/encoder"), 3)


def test_depths_and_decayed_rates_follow_the_layers(core):
    variables = encoder_variables(core)
    depths, layers = encoder_layers.depths(variables)
    assert layers == 2  # the tiny encoder
    by_name = {v.name: depths[id(v)] for v in variables}
    assert by_name["bert_encoder/embeddings/word_embeddings:0"] == 0
    assert by_name["bert_encoder/transformer_0/query/kernel:0"] == 1
    assert by_name["bert_encoder/transformer_1/output/bias:0"] == 2
    assert by_name["bert_encoder/pooler/kernel:0"] == 3
    rates = encoder_layers.decayed_rates(variables, 0.5)
    named = {v.name: rates[id(v)] for v in variables}
    assert named["bert_encoder/pooler/kernel:0"] == 1.0
    assert named["bert_encoder/transformer_1/output/bias:0"] == 0.5
    assert named["bert_encoder/transformer_0/query/kernel:0"] == 0.25
    assert named["bert_encoder/embeddings/word_embeddings:0"] == 0.125
    optimizer = optimizer_for(group_of(RunSettings(model_dir="unused", layer_decay=0.5),
                                       "trainer"), 10, encoder_variables=variables)
    assert len(optimizer._rates) == len(variables) - 2  # all but the pooler's (rate 1)


def test_reinit_draws_the_top_layers_only(core):
    variables = encoder_variables(core)
    before = {v.name: v.numpy().copy() for v in variables}
    changed = encoder_layers.reinitialize_top(variables, 1, seed=3)
    assert changed and all("transformer_1/" in name for name in changed)
    for v in variables:
        if v.name in changed:
            if "kernel" in v.name:
                assert not np.array_equal(v.numpy(), before[v.name])
                assert abs(float(np.std(v.numpy())) - 0.02) < 0.005
            else:  # layer norms 1 and 0, biases 0
                assert np.all(v.numpy() == (1.0 if "gamma" in v.name else 0.0)), v.name
        else:
            assert np.array_equal(v.numpy(), before[v.name]), v.name
    with pytest.raises(UsageError, match="has 2 layers"):
        encoder_layers.reinitialize_top(variables, 3)


def test_an_encoder_without_layer_names_is_refused():
    with pytest.raises(UsageError, match="name their layer"):
        encoder_layers.decayed_rates([tf.Variable(1.0, name="w")], 0.9)
    with pytest.raises(UsageError, match=r"\(0, 1\]"):
        encoder_layers.decayed_rates([tf.Variable(1.0, name="layer_0/w")], 1.5)
