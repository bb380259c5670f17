"""The task heads, at the path users import them from: see `zoo.model.heads`."""
from zoo.model.heads import POOLINGS, ClassifierHead, RegressionHead, SentencePooling, SpanHead

__all__ = ["POOLINGS", "ClassifierHead", "RegressionHead", "SentencePooling", "SpanHead"]
