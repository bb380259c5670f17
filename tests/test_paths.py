"""What users import keeps its path when the code moves, and the packages keep their layers."""
import ast
import pathlib

import zoo

LAYERS = ["base", "compute", "data", "hub_build", "model", "training", "evaluation", "export",
          "run", "kinds", "batch", "cli"]


def test_the_heads_and_cores_at_their_user_paths():
    from zoo import heads, models  # pylint: disable=import-outside-toplevel
    from zoo.model import cores  # pylint: disable=import-outside-toplevel
    from zoo.model import heads as model_heads  # pylint: disable=import-outside-toplevel
    from zoo.serving import load  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import

    assert heads.ClassifierHead is model_heads.ClassifierHead
    assert models.multi_head_core is cores.multi_head_core
    assert models.TextPacker is cores.TextPacker
    assert set(heads.__all__) <= set(dir(model_heads)) and set(models.__all__) <= set(dir(cores))


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
