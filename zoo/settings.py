"""What every task's run needs besides its data (the tasks fill these from flags)."""
import dataclasses
import os
from typing import Optional

from zoo import distribute, fusion, precision
from zoo.errors import UsageError
from zoo.hub import DEFAULT_MODEL

MODES = ("train", "eval", "train_and_eval", "predict", "export", "check_data")


@dataclasses.dataclass(frozen=True)
class Compute:
    """How a run computes, resolved once at its start and passed on explicitly."""

    precision: str  # "bf16" or "fp32": the training steps' precision (zoo.precision)
    xla_fusion: bool  # whether the training steps are XLA-fused (zoo.fusion)


@dataclasses.dataclass
class RunSettings:
    model_dir: str
    encoder_handle: str = DEFAULT_MODEL
    preprocessor_handle: Optional[str] = None
    max_seq_length: int = 128
    train_batch_size: int = 32  # global batch, over all replicas
    eval_batch_size: int = 64
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    max_train_steps: int = 0  # 0: no cap (see zoo.train.plan_epochs)
    warmup_proportion: float = 0.1
    decay: str = "linear"
    weight_decay: float = 0.01
    dropout: float = 0.1
    seed: int = 0
    checkpoint_every: int = 0
    strategy: str = "default"  # see zoo.distribute.STRATEGIES
    tpu: Optional[str] = None
    num_gpus: int = 0
    devices: Optional[list] = None  # explicit devices for "mirrored" (e.g. logical CPUs)
    steps_per_execution: int = 1
    precision: str = "auto"  # see zoo.precision: auto = bf16 on a CPU with AMX-BF16
    xla_fusion: str = "auto"  # see zoo.fusion: auto = on for fixed-shape training on a CPU
    allow_changed_settings: bool = False  # resume a model dir with other settings (run.json)
    export_dir: Optional[str] = None
    output_file: Optional[str] = None


def start_run(mode, settings: RunSettings, padding):
    """Checks the mode, makes the model dir, sets precision, resolves fusion.

    Returns (strategy, `Compute`). The strategy comes first: multi-worker training needs it
    before any other TF work. The precision is set before any tf.function runs (it applies to
    graphs optimized after it). XLA fusion is not set here: `zoo.train.fit` turns it on around
    its training steps only (`Compute.xla_fusion`). `padding` is the training batches' policy
    (SQuAD windows are always fixed).
    """
    if mode not in MODES:
        raise UsageError(f"--mode must be one of {MODES}, not {mode!r}")
    precision.resolve(settings.precision)  # a bad value fails before any work
    fusion.resolve(settings.xla_fusion, padding, accelerators=0,
                   steps_per_execution=settings.steps_per_execution)
    os.makedirs(settings.model_dir, exist_ok=True)
    strategy = distribute.strategy_for(settings)
    accelerators = 1 if distribute.is_tpu(strategy) else None
    training = mode in ("train", "train_and_eval")
    chosen = precision.apply(settings.precision, accelerators=accelerators, training=training)
    fused = fusion.resolve(settings.xla_fusion, padding, training=training,
                           accelerators=accelerators,
                           steps_per_execution=settings.steps_per_execution,
                           replicas=strategy.num_replicas_in_sync)
    return strategy, Compute(precision=chosen, xla_fusion=fused)
