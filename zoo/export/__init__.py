"""SavedModel exports that take raw text: the serving modules and the atomic save
(`savedmodel`), each signature stored as one flat function (`flat_serving`), the frozen fp32 or
bf16 core (`frozen_core`) with its copy for requests of a few tokens (`small_requests`), the
graph helpers those rewrites share (`grappler`), and what a Python process that runs an export
needs: the TF Text op libraries it loads (`text_ops`) and a load without the functions only TF
Serving runs (`python_load`, which also tells a bf16 export by its graph).

The rewrites read and change TensorFlow's own graphs (op names, Grappler's passes); the test
`tests/export/test_graph_patterns.py` fails, naming the pattern, when an installed TensorFlow no
longer produces what they expect."""
