"""Flags shared by every task's train.py, and turning them into zoo's plain arguments.

Importing this module defines the flags; each task adds its own data flags and calls `run`.
"""
import os
import sys
import traceback

from absl import flags

flags.DEFINE_enum("mode", "train_and_eval",
                  ["train", "eval", "train_and_eval", "predict", "export", "check_data"],
                  "train: fine-tune (and export if --export_dir); eval: evaluate the latest "
                  "checkpoint; train_and_eval: evaluate after every epoch; predict: write "
                  "--output_file for --predict_file; export: write a TF Serving SavedModel; "
                  "check_data: report rows, labels (per shard too), bad rows, duplicates and "
                  "token lengths of every split given, to MODEL_DIR/data_check_<split>.json.")
flags.DEFINE_string("model_dir", None, "Checkpoints, labels, results, summaries and plots go "
                    "here. Rerunning with the same dir resumes from its latest checkpoint.")
flags.DEFINE_string("encoder_handle", "minilm_l6_h384_uncased",
                    "Encoder: a name from `zoo-models`, a TF Hub URL, or a local directory.")
flags.DEFINE_string("preprocessor_handle", None,
                    "Preprocessor: name, URL or directory. Default: the one matching the encoder.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per packed input (longer text is trimmed).")
flags.DEFINE_enum("padding", "bucketed", ["bucketed", "dynamic", "fixed"],
                  "bucketed: cut each batch to its longest text, and make training batches of "
                  "texts of similar length (least padding; rows are still shuffled, batches "
                  "within windows of 50 batches); dynamic: cut each batch to its longest text; "
                  "fixed: always pad to --max_seq_length. dynamic and fixed train on the same "
                  "batches.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch size (global, over all replicas).")
flags.DEFINE_integer("eval_batch_size", 64, "Batch size of evaluation and prediction.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate of AdamW (after warmup).")
flags.DEFINE_float("num_train_epochs", 3, "Training epochs.")
flags.DEFINE_integer("max_train_steps", 0, "Stop training after this many steps (0: no limit; "
                     "less than an epoch makes one short epoch, more is rounded down to epochs).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of training steps of linear warmup.")
flags.DEFINE_enum("decay", "linear", ["linear", "exponential"],
                  "Learning-rate decay after warmup: linear to 0, or exponential to 1% of peak.")
flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay (never on LayerNorm or bias).")
flags.DEFINE_integer("seed", 0, "Random seed (initialisation, shuffling, dropout).")
flags.DEFINE_integer("checkpoint_every", 0,
                     "Also checkpoint every N training steps (0: only at the end of each epoch).")
flags.DEFINE_string("data_dir", None, "A GLUE-layout folder: train.tsv (train), dev.tsv (eval) "
                    "and test.tsv (predict). --train_file etc. override single files.")
flags.DEFINE_enum("strategy", "default",
                  ["default", "one_device", "mirrored", "multi_worker_mirrored", "tpu", "auto"],
                  "Distribution strategy. multi_worker_mirrored reads the cluster from TF_CONFIG; "
                  "auto uses a TPU if one resolves, else all GPUs, else the default strategy.")
flags.DEFINE_string("tpu", None, "TPU name or grpc:// address; 'local' on a TPU VM.")
flags.DEFINE_integer("num_gpus", 0, "GPUs for --strategy=mirrored (0: all visible).")
flags.DEFINE_integer("steps_per_execution", 1,
                     "Training steps per tf.function call (raise on TPU to cut host round trips).")
flags.DEFINE_enum("precision", "auto", ["auto", "bf16", "fp32"],
                  "Compute precision. bf16: matmuls and the ops around them in bfloat16 (weights, "
                  "optimizer and loss stay fp32), through TensorFlow's oneDNN graph rewrite, which "
                  "also reaches inside Hub encoders; auto: bf16 for training on a CPU with "
                  "AMX-BF16 and no GPU/TPU, fp32 for everything else.")
flags.DEFINE_enum("xla_fusion", "auto", ["auto", "on", "off"],
                  "XLA fusion of the training step's elementwise ops and optimizer update on a "
                  "CPU (matmuls stay with oneDNN). XLA compiles once per batch shape (tens of "
                  "seconds), so auto: on for training with --padding=fixed (and SQuAD, whose "
                  "windows are all one length) on one CPU replica, off otherwise. Needs "
                  "--steps_per_execution=1.")
flags.DEFINE_bool("allow_changed_settings", False,
                  "Resume a --model_dir whose run had other settings (batch size, epochs, "
                  "sequence length, learning rate, data, encoder: MODEL_DIR/run.json). Without "
                  "it such a rerun stops and lists what changed; with it the run goes on with the "
                  "new settings (the schedule is recomputed) and logs each change.")
flags.DEFINE_string("train_file", None, "Training data: a file, a glob of shards "
                    "(data/train-*.csv) or comma-separated files/globs.")
flags.DEFINE_string("eval_file", None, "Evaluation data (file, glob or comma-separated list).")
flags.DEFINE_string("predict_file", None, "Data to predict on (file, glob or list).")
flags.DEFINE_string("output_file", None, "Predictions file (.csv or .jsonl) for --mode=predict.")
flags.DEFINE_string("export_dir", None, "Where to write the TF Serving SavedModel (export, and "
                    "the end of training). For TF Serving use a numbered dir, e.g. .../model/1.")
flags.DEFINE_enum("bad_rows", "error", ["error", "skip"],
                  "A bad row (malformed, wrong column count, missing column, empty text, unknown "
                  "label, invalid UTF-8...): 'error' stops with file, line and problem; 'skip' "
                  "goes on, writes each rejected row and its reason to "
                  "MODEL_DIR/rejected_rows_<split>.jsonl, and in predict gives it an output row "
                  "with an 'error' field. --mode=check_data always reports every bad row.")
flags.DEFINE_bool("dedupe", False, "Drop training rows whose text repeats an earlier row's.")
flags.DEFINE_integer("shuffle_buffer", 100_000,
                     "Rows in the training shuffle buffer (shards are read as streams, "
                     "interleaved, and shuffled through this buffer).")
flags.mark_flag_as_required("model_dir")
FLAGS = flags.FLAGS


def save_flags():
    """Writes the task's flags to MODEL_DIR/flags.txt (reusable with --flagfile).

    Training modes write flags.txt; eval, predict and export write flags_<mode>.txt, so the
    flags that trained the model are never overwritten.

    Only flags that zoo's tasks define are written: flags that libraries define as they are
    imported would make the file unreadable to a run that has not imported them yet.
    """
    main = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    lines = []
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        is_task = (module.startswith("tasks.") or module == "__main__"
                   or os.path.abspath(module) == main)
        if is_task:
            lines += [f.serialize() for f in module_flags if f.value is not None]
    os.makedirs(FLAGS.model_dir, exist_ok=True)
    name = "flags.txt" if FLAGS.mode in ("train", "train_and_eval") else f"flags_{FLAGS.mode}.txt"
    with open(os.path.join(FLAGS.model_dir, name), "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in lines if line) + "\n")


GLUE_FILES = dict(train="train.tsv", eval="dev.tsv", predict="test.tsv")


def split_file(split):
    """The file of a split: --train_file/--eval_file/--predict_file, else in --data_dir."""
    explicit = {"train": FLAGS.train_file, "eval": FLAGS.eval_file,
                "predict": FLAGS.predict_file}[split]
    if explicit:
        return explicit
    if FLAGS.data_dir:
        return os.path.join(FLAGS.data_dir, GLUE_FILES[split])
    from zoo.data.sources import MissingSplit  # pylint: disable=import-outside-toplevel

    raise MissingSplit(f"no {split} data: pass --{split}_file or --data_dir")


def settings_kwargs():
    """The common flags as keyword arguments of `zoo.settings.RunSettings`."""
    return dict(
        model_dir=FLAGS.model_dir, encoder_handle=FLAGS.encoder_handle,
        preprocessor_handle=FLAGS.preprocessor_handle, max_seq_length=FLAGS.max_seq_length,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
        max_train_steps=FLAGS.max_train_steps,
        warmup_proportion=FLAGS.warmup_proportion, decay=FLAGS.decay,
        weight_decay=FLAGS.weight_decay, seed=FLAGS.seed,
        checkpoint_every=FLAGS.checkpoint_every, strategy=FLAGS.strategy, tpu=FLAGS.tpu,
        num_gpus=FLAGS.num_gpus, steps_per_execution=FLAGS.steps_per_execution,
        precision=FLAGS.precision, xla_fusion=FLAGS.xla_fusion,
        allow_changed_settings=FLAGS.allow_changed_settings,
        export_dir=FLAGS.export_dir, output_file=FLAGS.output_file)


def run_task(run, settings, read_split):
    """Saves the flags (chief only) and runs `run(mode, settings, read_split)`.

    The user's errors (`zoo.errors`: bad flags, data, handles, missing files) end with one clear
    line and no traceback; a failure inside TensorFlow with its traceback and then a line naming
    the stage of the run (`zoo.stages`); anything else is a bug and keeps its traceback."""
    from zoo import distribute, hub  # pylint: disable=import-outside-toplevel
    from zoo.data.text_files import DataError  # pylint: disable=import-outside-toplevel

    if distribute.chief_from_env():  # under multi-worker training only the chief writes
        save_flags()
    from zoo.errors import OutputError, UsageError  # pylint: disable=import-outside-toplevel
    from zoo.stages import StageError  # pylint: disable=import-outside-toplevel

    try:
        return run(FLAGS.mode, settings, read_split)
    except (DataError, hub.HandleError, FileNotFoundError, UsageError, OutputError) as e:
        raise SystemExit(f"error: {e}") from None
    except StageError as e:  # TensorFlow failed: its traceback, then what zoo was doing
        traceback.print_exc()
        raise SystemExit(f"error: {e}") from None


def file_source(split, columns):
    """The streamed source of a split's file(s); labels are required except for predict."""
    from zoo.data.sources import FileSource  # pylint: disable=import-outside-toplevel

    return FileSource(split_file(split), columns, require_label=split != "predict")


def run_classification(read_split, pair, label_map=""):
    """Runs zoo.classification with the common flags; `read_split(split)` returns a source."""
    from zoo import classification  # pylint: disable=import-outside-toplevel

    settings = classification.Settings(**settings_kwargs(), pair=pair, padding=FLAGS.padding,
                                       label_map=label_map, bad_rows=FLAGS.bad_rows,
                                       dedupe=FLAGS.dedupe, shuffle_buffer=FLAGS.shuffle_buffer)
    return run_task(classification.run, settings, read_split)
