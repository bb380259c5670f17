"""What the machine decides: the precision of training and export (`precision`: bf16 through
oneDNN where the CPU has it), XLA fusion of the training step (`fusion`), glibc's malloc
thresholds (`malloc`), grappler for the model's functions but not tf.data's (`pipelines`), a
run's seed, set without dropping the functions the process has instantiated (`seeds`), and
grappler off for one thread's calls (`call_options`: `zoo.serving`'s one-input predictions).
Resolved once at the start of a run and passed on explicitly."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Compute:
    """How a run computes, resolved once at its start and passed on explicitly.

    precision: "bf16" or "fp32" for the training steps (`precision`).
    eval_precision: the same for evaluation, prediction and export (fp32 unless bf16 is forced).
    xla_fusion: whether the training steps are XLA-fused (`fusion`).
    """

    precision: str = "fp32"
    eval_precision: str = "fp32"
    xla_fusion: bool = False
