"""Core models, the text packer and the export of a classifier, at the path users import them
from: see `zoo.model.cores` and `zoo.export.savedmodel`."""
from zoo.model.cores import (INPUT_NAMES, TextPacker, build_text_classifier, classifier_core,
                             multi_head_core, regression_core, span_core, tagging_core,
                             text_model)
from zoo.model.hub import resolve_handles

__all__ = ["INPUT_NAMES", "TextPacker", "build_text_classifier", "classifier_core",
           "export_classifier", "multi_head_core", "regression_core", "resolve_handles",
           "span_core", "tagging_core", "text_model"]


def export_classifier(export_dir, core, packer, label_names, precision="fp32", pair=False,
                      trim_padding=True, small_requests=None):
    """Writes a classifier core as a TF Serving SavedModel whose signatures take raw text, as
    `zoo export` writes a trained model's: `serving_default` maps `text` (or `text_a` and
    `text_b` with `pair`) to `label`, `label_id` and `probabilities`; `zoo.serving.load` and
    `zoo check-export` read it. Returns `export_dir`.

    Args:
        export_dir: where to write (a local path or a bucket); for TF Serving a numbered
            directory, e.g. `.../my_model/1`.
        core: a Keras model from packed inputs (`INPUT_NAMES`) to logits, e.g.
            `classifier_core(encoder, num_classes)` after your own training.
        packer: the `TextPacker` that packs texts for `core` (its preprocessor and length).
        label_names: the name of each class, in the order of the logits.
        precision: `fp32` (the weights as trained) or `bf16` (the core frozen in bfloat16;
            `zoo.export.frozen_core`), written where TensorFlow's oneDNN bf16 rewrite runs
            (AVX-512 or AVX-NE-CONVERT; on other CPUs a `UsageError` says so).
        pair: whether the model classifies a pair of texts.
        trim_padding: pad each request to its longest text (default); False pads every request
            to the packer's length (one shape, for accelerators that compile per shape).
        small_requests: give calls of a few tokens a graph of their own, made for one-text
            latency (`zoo.export.small_requests`); None (default): on for bf16, off for fp32,
            where it freezes the core (one text faster with TensorFlow's oneDNN rewrites on, a
            slower load and first call).

    Example:
    ```python
    encoder, preprocessor = resolve_handles("minilm_l6_h384_uncased")
    core = classifier_core(encoder, num_classes=2)
    # ... train core ...
    export_classifier("runs/mine/export/1", core, TextPacker(preprocessor, 128),
                      ["negative", "positive"])
    ```
    """
    from zoo.base.errors import UsageError
    from zoo.compute.precision import EXPORT_PRECISIONS, check_export_cpu
    from zoo.export import frozen_core, savedmodel

    if precision not in EXPORT_PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(EXPORT_PRECISIONS)}, not "
                         f"{precision!r}")
    check_export_cpu(precision)
    classes = getattr(core, "output_shape", (None,))[-1]  # (a subclassed model may not say)
    if classes is not None and len(label_names) != classes:
        raise UsageError(f"{len(label_names)} label names for a core of {classes} classes")
    return savedmodel.export_classifier(
        export_dir, frozen_core.serving_core(core, precision, small_requests), packer,
        list(label_names), pair, trim_padding)
