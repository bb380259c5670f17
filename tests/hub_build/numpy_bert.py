"""A float64 NumPy BERT forward pass over Hugging Face tensor names: the oracle for weight mapping."""
from math import erf

import numpy as np

_erf = np.vectorize(erf)


def forward(weights, config, word_ids, type_ids):
    """Returns (sequence_output, pooled_output) for unpadded inputs, in float64."""
    w = {k.removeprefix("bert."): np.asarray(v, np.float64) for k, v in weights.items()}
    heads = config["num_attention_heads"]
    batch, seq = word_ids.shape
    size = config["hidden_size"] // heads

    def layer_norm(x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        gamma = w.get(f"{name}.weight", w.get(f"{name}.gamma"))
        beta = w.get(f"{name}.bias", w.get(f"{name}.beta"))
        return (x - mean) / np.sqrt(var + config["layer_norm_eps"]) * gamma + beta

    def dense(x, name):
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def split(t):
        return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

    x = (w["embeddings.word_embeddings.weight"][word_ids]
         + w["embeddings.position_embeddings.weight"][:seq][None]
         + w["embeddings.token_type_embeddings.weight"][type_ids])
    x = layer_norm(x, "embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (split(dense(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1)
        x = layer_norm(x + dense(context, p + "attention.output.dense"),
                       p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        if config.get("hidden_act", "gelu") == "gelu":
            h = h * 0.5 * (1 + _erf(h / np.sqrt(2)))
        else:  # "gelu_new": the tanh approximation (Google's original BERT)
            h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
        x = layer_norm(x + dense(h, p + "output.dense"), p + "output.LayerNorm")
    pooled = np.tanh(dense(x[:, 0], "pooler.dense"))
    return x, pooled
