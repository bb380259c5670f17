"""What a run needs besides its data: settings declared once, and the run's compute state.

Every setting is a dataclass field declared with `setting(default, help, choices)`
(`zoo.base.fields`): its name, type, default, allowed values and help text live here and
nowhere else. `zoo.cli.common` turns the fields of a task's settings class into that task's absl
flags, so `--help` lists exactly what the task uses and a default is never written twice. A
task's settings class subclasses `RunSettings`, adds its own fields and may change a default
with `override`.

Each field names its group (`GROUPS`): model (what the model is: encoder, sequence length, head,
labels, windows), data (how rows are read, beside the data spec), trainer (the schedule, the
optimizer, warm starts, checkpoints), runtime (where and how it computes: model dir, strategy,
precision), export, and output (predict and explain files). On the command line, in tasks.json
and from Python they stay one flat set of names; inside zoo a layer takes the group it reads
(`zoo.base.fields.group_of(settings, "trainer")`: the optimizer, the epoch plan and the best
checkpoint take the trainer group, the strategy the runtime group, the export the export
group, a warm start's encoder check the model group). The runner, which composes those layers,
and a kind, which declares its settings class, read the whole. On the command line the groups
are the sections of `--help`.
"""
import dataclasses
from typing import Optional

from zoo.base.errors import UsageError
from zoo.base.fields import group_of, setting
from zoo.compute import Compute, fusion, pipelines, precision
from zoo.compute.precision import EXPORT_PRECISIONS  # the class body's `precision` is a field
from zoo.export.litert import QUANTIZATIONS as LITERT_QUANTIZATIONS
from zoo.model.hub import DEFAULT_MODEL
from zoo.run.paths import prepare_model_dir
from zoo.training import distribute

GROUPS = ("model", "data", "trainer", "runtime", "export", "output")
EXPORT_FORMATS = ("savedmodel", "litert")
MODES = ("train", "eval", "train_and_eval", "predict", "export", "check_data", "explain")
MODE_HELP = {
    "train": "fine-tune (and export if --export_dir)",
    "eval": "evaluate the latest checkpoint",
    "train_and_eval": "evaluate after every epoch",
    "predict": "write --output_file for --predict_file",
    "export": "write a TF Serving SavedModel to --export_dir",
    "check_data": "report rows, labels (per shard too), bad rows, duplicates and token lengths "
                  "of every split given, to MODEL_DIR/data_check_<split>.json",
    "explain": "write why each row of --predict_file got its prediction (an attribution per "
               "word) to --output_file (.jsonl) and an HTML page beside it (.html)",
}


@dataclasses.dataclass
class RunSettings:
    """What every task's run takes (each field is a flag of every task)."""

    model_dir: str = setting(
        None, "Checkpoints, results, summaries and plots go here. Rerunning with the same dir "
        "resumes from its latest checkpoint.", path=True, group="runtime")
    encoder_handle: str = setting(
        DEFAULT_MODEL, "Encoder: a name from `zoo-models`, a TF Hub URL, or a local directory.",
        group="model")
    preprocessor_handle: Optional[str] = setting(
        None, "Preprocessor: name, URL or directory. Default: the one matching the encoder.",
        group="model")
    max_seq_length: int = setting(128, "Tokens per packed input (longer text is trimmed).", low=3,
                                  group="model")
    train_batch_size: int = setting(32, "Training batch size (global, over all replicas).", low=1,
                                    group="trainer")
    gradient_accumulation_steps: int = setting(
        1, "Sum the gradients of this many training batches into one update: the update of a "
        "batch N times --train_batch_size, with the memory of one batch (a step is one update).",
        low=1, group="trainer")
    eval_batch_size: int = setting(64, "Batch size of evaluation and prediction.", low=1,
                                   group="runtime")
    learning_rate: float = setting(5e-5, "Peak learning rate of AdamW (after warmup).", low=0,
                                   low_open=True, group="trainer")
    num_train_epochs: float = setting(
        3.0, "Training epochs; a fraction trains that part of the last epoch.", low=0,
        low_open=True, group="trainer")
    max_train_steps: int = setting(
        0, "Stop training after exactly this many steps (0: no limit).", low=0, group="trainer")
    warmup_proportion: float = setting(0.1, "Fraction of training steps of linear warmup.",
                                       low=0, high=1, group="trainer")
    decay: str = setting("linear", "Learning-rate decay after warmup: linear to 0, or "
                         "exponential to 1% of peak.", choices=("linear", "exponential"),
                         group="trainer")
    weight_decay: float = setting(0.01, "AdamW weight decay (never on LayerNorm or bias).",
                                  low=0, group="trainer")
    head_learning_rate_multiplier: float = setting(
        1.0, "The head's learning rate is this times --learning_rate (which the encoder "
        "keeps): a freshly initialised head may learn faster than the pretrained encoder.",
        low=0, low_open=True, group="trainer")
    frozen_encoder_steps: int = setting(
        0, "Warm start: for the first N training steps only the head learns (the encoder's "
        "weights stay as loaded), then the whole model does.", low=0, group="trainer")
    init_from: Optional[str] = setting(
        None, "Start training from the weights of another run: a model dir zoo trained (its "
        "best checkpoint if it kept one, else its newest). The encoder's weights transfer; "
        "the head's when the task kind and outputs are the same (else it starts fresh, and the "
        "run says why). Its encoder and preprocessor are this run's unless set; a rerun "
        "resumes this run's own checkpoints.", path=True, group="trainer")
    init_from_task: str = setting(
        "", "With --init_from of a multi-task model dir: the task whose head to take (without "
        "it the encoder alone transfers).", group="trainer")
    layer_decay: float = setting(
        1.0, "Layer-wise learning-rate decay: the encoder's top layer learns at this times the "
        "rate, each layer below at this times the one above, the embeddings last (1: none).",
        low=0, low_open=True, high=1, group="trainer")
    freeze_word_embeddings: Optional[bool] = setting(
        None, "Keep the encoder's word-piece embedding table as pretrained: no gradient and no "
        "optimizer state for it (the position embeddings and the layers still train); a step "
        "takes less time and a checkpoint less space. Unset: on for an encoder with a "
        "multilingual vocabulary, such as multilingual-e5-small's (over 100,000 pieces), off "
        "for others (docs/training.md).", group="trainer")
    reinit_layers: int = setting(
        0, "Draw the top N transformer layers of the encoder anew before training (for small "
        "data sets; after --init_from).", low=0, group="trainer")
    seed: int = setting(0, "Random seed (initialisation, shuffling, dropout).", group="trainer")
    keep_best: str = setting(
        "", "Keep the checkpoint of the best evaluation by this metric (a key of "
        "eval_results.json: accuracy, f1, exact_match, pearson...; eval_loss or loss) beside "
        "the latest, export it, and use it in eval, predict and export runs; MODEL_DIR/best.json "
        "records which step won. Losses and errors are better lower, other metrics higher. "
        "Needs --mode=train_and_eval.", group="trainer")
    early_stopping_patience: int = setting(
        0, "With --keep_best: stop training after this many evaluations in a row without a "
        "better value (0: never stop early).", low=0, group="trainer")
    checkpoint_every: int = setting(
        0, "Also checkpoint every N training steps (0: only at the end of each epoch).", low=0,
        group="trainer")
    strategy: str = setting(
        "default", "Distribution strategy. multi_worker_mirrored reads the cluster from "
        "TF_CONFIG; auto uses a TPU if one resolves, else all GPUs, else the default strategy.",
        choices=distribute.STRATEGIES, group="runtime")
    tpu: Optional[str] = setting(None, "TPU name or grpc:// address; 'local' on a TPU VM.",
                                 group="runtime")
    num_gpus: int = setting(0, "GPUs for --strategy=mirrored (0: all visible).", low=0,
                            group="runtime")
    devices: Optional[list] = setting(None, "explicit devices for mirrored (tests)", flag=False,
                                      group="runtime")
    steps_per_execution: int = setting(
        1, "Training steps per tf.function call (raise on TPU to cut host round trips).", low=1,
        group="runtime")
    precision: str = setting(
        "auto", "Compute precision. bf16: matmuls and the ops around them in bfloat16 "
        "(weights, optimizer and loss stay fp32), through TensorFlow's oneDNN graph rewrite, "
        "which also reaches inside Hub encoders; auto: bf16 for training on a CPU with "
        "AMX-BF16 or AVX512_BF16 and no GPU/TPU, fp32 for everything else.",
        choices=precision.PRECISIONS, group="runtime")
    xla_fusion: str = setting(
        "auto", "XLA fusion of the training step's elementwise ops and optimizer update on a "
        "CPU (matmuls stay with oneDNN). XLA compiles once per batch shape (tens of seconds), "
        "so auto: on for training whose batches all have one shape (--padding=fixed, SQuAD "
        "windows) on one CPU replica with AMX, off otherwise (on other CPUs the plain step "
        "measured faster). Needs --steps_per_execution=1.",
        choices=fusion.FUSIONS, group="runtime")
    allow_changed_settings: bool = setting(
        False, "Resume a --model_dir whose run had other settings (batch size, epochs, "
        "sequence length, learning rate, data, encoder: MODEL_DIR/run.json). Without it such "
        "a rerun stops and lists what changed; with it the run goes on with the new settings "
        "(the schedule is recomputed) and logs each change.", group="trainer")
    export_dir: Optional[str] = setting(
        None, "Where to write the TF Serving SavedModel (export, and the end of training). "
        "For TF Serving use a numbered dir, e.g. .../model/1.", path=True, group="export")
    export_precision: str = setting(
        "fp32", "Arithmetic of the export. bf16: the weights its matmuls read stored in "
        "bfloat16 and the matmuls run in bf16 by the export itself (also under TF Serving): "
        "faster, as accurate within measurement (BENCHMARKS.md). Serve it on a CPU with "
        "AMX-BF16 or AVX512_BF16: others emulate bf16. Writing it needs a CPU with AVX-512 or "
        "AVX-NE-CONVERT.",
        choices=EXPORT_PRECISIONS, group="export")
    export_small_requests: Optional[bool] = setting(
        None, "Give calls of a few tokens a copy of the graph of their own, made for one-text "
        "latency (zoo.export.small_requests). Unset: on for --export_precision=bf16, off for "
        "fp32, where the copy means a frozen graph that answers one text faster with "
        "TensorFlow's oneDNN rewrites on (TF_ENABLE_ONEDNN_OPTS=1) but loads and answers its "
        "first call slower. --noexport_small_requests keeps one copy.", group="export")
    export_format: str = setting(
        "savedmodel", "What --export_dir gets: savedmodel (for TF Serving and zoo.serving) or "
        "litert (EXPORT_DIR/model.tflite for phones and edge boxes, run by zoo.litert; class, "
        "multi-label and regression models).", choices=EXPORT_FORMATS, group="export")
    litert_quantization: str = setting(
        "dynamic", "With --export_format=litert: none (fp32), dynamic (int8 weights) or int8 "
        "(int8 weights and activations, calibrated on the first --litert_calibration_rows "
        "rows of the training data).", choices=LITERT_QUANTIZATIONS, group="export")
    litert_calibration_rows: int = setting(
        200, "Training rows that calibrate --litert_quantization=int8.", low=1, group="export")
    output_file: Optional[str] = setting(None, "Predictions file of --mode=predict.", path=True,
                                         group="output")
    print_json: bool = setting(
        False, "Also print each mode's full record as a JSON line on standard output (eval: "
        "{...}, train: {...}) for scripts; the lines for a person then go to standard error.",
        group="runtime")


def start_run(mode, settings: RunSettings, padding, modes=MODES):
    """Checks the mode and the model dir, makes it, resolves precision and fusion (the settings'
    fields are checked by `zoo.run.runner.start`, before a task's own checks).

    Returns (strategy, `Compute`). The strategy comes first: multi-worker training needs it before
    any other TF work. Neither precision nor fusion is set here: `zoo.training.loop.fit` and the
    runner turn each on around the calls it applies to (`precision.scope`, `fusion.scope`).
    `padding` is the training batches' policy ("fixed" when every batch has one shape).
    """
    if mode not in modes:
        raise UsageError(f"`mode` must be one of {modes}, not {mode!r}")
    if not settings.model_dir:
        raise UsageError("`model_dir` is required")
    precision.check_export_cpu(settings.export_precision)
    fusion.resolve(settings.xla_fusion, padding, accelerators=0,  # a bad value fails first
                   steps_per_execution=settings.steps_per_execution)
    prepare_model_dir(settings.model_dir, mode)
    # the strategy starts TensorFlow's context: grappler for the model's functions only
    strategy = pipelines.start_context(
        lambda: distribute.strategy_for(group_of(settings, "runtime")))
    accelerators = 1 if distribute.is_tpu(strategy) else None
    training = mode in ("train", "train_and_eval")
    return strategy, Compute(
        precision=precision.resolve(settings.precision, accelerators=accelerators),
        eval_precision=precision.resolve(precision.for_inference(settings.precision),
                                         accelerators=accelerators),
        xla_fusion=fusion.resolve(settings.xla_fusion, padding, training=training,
                                  accelerators=accelerators,
                                  steps_per_execution=settings.steps_per_execution,
                                  replicas=strategy.num_replicas_in_sync))
