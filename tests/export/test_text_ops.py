"""zoo.export.text_ops: the TF Text op libraries an export's graph needs, loaded without
importing tensorflow_text (in a fresh process: this one has imported it)."""
import json
import os
import subprocess
import sys

import tensorflow as tf
import tensorflow_text as text
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session
from tensorflow.python.framework import op_def_registry

from tests.helpers import ROOT
from zoo.export import text_ops


def test_each_library_defines_the_ops_the_table_names():
    for library, ops in text_ops.LIBRARIES.items():
        handle = pywrap_tf_session.TF_LoadLibrary(os.path.join(text_ops.library_dir(), library))
        defined = op_def_pb2.OpList.FromString(bytes(pywrap_tf_session.TF_GetOpList(handle)))
        assert sorted(op.name for op in defined.op) == sorted(ops), library


def test_the_preprocessors_of_both_tokenizers_need_only_listed_libraries(
        tiny_hub, tiny_multilingual_hub):
    for hub, expected in ((tiny_hub, "_wordpiece_tokenizer.so"),
                          (tiny_multilingual_hub, "_sentencepiece_tokenizer.so")):
        ops = text_ops.graph_ops(os.path.join(hub, "preprocessor"))
        outside_tensorflow = {op for op in ops if op not in text_ops.LIBRARY_OF
                              and op_def_registry.get(op) is None}
        assert not outside_tensorflow, hub
        assert expected in {text_ops.LIBRARY_OF[op] for op in ops if op in text_ops.LIBRARY_OF}


FRESH = """
import json, sys
import tensorflow as tf
from zoo.export import text_ops
loaded = text_ops.register_for(sys.argv[1])
tokens = tf.saved_model.load(sys.argv[1])(tf.constant(["a fine film"]))
imported = "tensorflow_text" in sys.modules
other = text_ops.register_for(sys.argv[2])
print(json.dumps(dict(loaded=loaded, imported=imported, other=other,
                      imported_after="tensorflow_text" in sys.modules,
                      ids=tokens["input_word_ids"].numpy().tolist(),
                      words=[[w.decode() for w in row] for row in tf.saved_model.load(
                          sys.argv[2]).split(tf.constant(["a fine film"])).to_list()])))
"""


class Splitter(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def split(self, texts):
        return text.WhitespaceTokenizer().tokenize(texts)


def test_a_fresh_process_loads_only_what_the_graph_runs(tiny_hub, tmp_path):
    """A preprocessor's libraries, not tensorflow_text's Python; a graph with an op of another
    library imports tensorflow_text whole."""
    preprocessor = os.path.join(tiny_hub, "preprocessor")
    splitter = str(tmp_path / "splitter")
    tf.saved_model.save(Splitter(), splitter)
    done = subprocess.run([sys.executable, "-c", FRESH, preprocessor, splitter], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["loaded"] == ["_normalize_ops.so", "_regex_split_ops.so", "_trimmer_ops.so",
                             "_wordpiece_tokenizer.so"]
    assert out["imported"] is False
    expected = tf.saved_model.load(preprocessor)(tf.constant(["a fine film"]))
    assert out["ids"] == expected["input_word_ids"].numpy().tolist()
    assert out["other"] is None and out["imported_after"] is True
    assert out["words"] == [["a", "fine", "film"]]


def test_with_tensorflow_text_imported_the_graph_is_not_read(tiny_hub, monkeypatch):
    def read(export_dir):
        raise AssertionError(f"{export_dir} was read")
    monkeypatch.setattr(text_ops, "graph_ops", read)
    assert text_ops.register_for(os.path.join(tiny_hub, "preprocessor")) == []


def test_an_unreadable_graph_is_left_to_the_loader(tmp_path, monkeypatch):
    monkeypatch.delitem(sys.modules, "tensorflow_text")  # (so that the graph is read)
    (tmp_path / "saved_model.pb").write_bytes(b"not a protocol buffer")
    assert text_ops.register_for(str(tmp_path)) == []
    assert text_ops.register_for(str(tmp_path / "absent")) == []
