"""Core models and the text packer, at the path users import them from: see `zoo.model.cores`."""
from zoo.model.cores import (INPUT_NAMES, TextPacker, build_text_classifier, classifier_core,
                             multi_head_core, regression_core, span_core, tagging_core,
                             text_model)

__all__ = ["INPUT_NAMES", "TextPacker", "build_text_classifier", "classifier_core",
           "multi_head_core", "regression_core", "span_core", "tagging_core", "text_model"]
