"""What trained a model dir, saved as MODEL_DIR/run.json and checked before it is used again.

A model dir holds one model. Without a check, a rerun that resumes it with another batch size,
epoch count, sequence length, data or encoder trains on quietly (its schedule and data no longer
those of the checkpoint), and an eval, predict or export with another encoder, head size or task
may run on weights that were never restored. `check_resume` stops such a rerun with the list of
what changed (unless the user allows it); `check_restore` stops a restore whose model differs
from the trained one.
"""
import dataclasses
import json
import os
import subprocess

import tensorflow as tf
from absl import logging

from zoo.base import fs
from zoo.base.errors import UsageError
from zoo.base.files import load_json, save_json

RUN_FILE = "run.json"
# What the weights depend on: a restore with any of these changed restores the wrong model.
MODEL_KEYS = ("task", "encoder_handle", "preprocessor_handle", "outputs", "pooling")
# What else decides a training run: changing it mid-run changes the schedule or the data.
TRAINING_KEYS = ("train_batch_size", "gradient_accumulation_steps", "num_train_epochs",
                 "max_train_steps", "max_seq_length", "learning_rate", "warmup_proportion",
                 "decay", "weight_decay", "head_learning_rate_multiplier",
                 "frozen_encoder_steps", "freeze_word_embeddings", "layer_decay", "reinit_layers",
                 "seed", "class_weights",
                 "tasks", "task_sampling", "temperature", "data")


def git_commit():
    """The commit of zoo's git checkout (with "+changes" when files differ from it), or None
    for an installed zoo."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.exists(os.path.join(root, ".git")):
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty.strip() else "")


def describe(task, settings, outputs, data=None):
    """The record of a training run: its task, model (`outputs`: what the head predicts, e.g.
    the label list), schedule and data."""
    record = dict(task=task, outputs=outputs, data=data)
    declared = {f.name for f in dataclasses.fields(settings)}  # (pooling: kinds that pool)
    for key in MODEL_KEYS + TRAINING_KEYS:
        if key not in record and key in declared:
            record[key] = getattr(settings, key)
    return record


def load(model_dir):
    """The saved record of `model_dir`, or None (a model dir trained before zoo saved one)."""
    return load_json(fs.join(model_dir, RUN_FILE))


def save(model_dir, record):
    save_json(fs.join(model_dir, RUN_FILE), record)


def _show(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else repr(value)


def summary(saved):
    """The model keys of a saved record, as flags: "task=..., encoder_handle=..."."""
    return ", ".join(f"{key}={_show(saved.get(key))}" for key in MODEL_KEYS if key in saved)


def differences(saved, current, keys):
    """Lines "key: saved -> current" for the keys whose values differ."""
    return [f"{key}: {_show(saved.get(key))} -> {_show(current.get(key))}"
            for key in keys if key in saved and saved.get(key) != current.get(key)]


def check_resume(model_dir, current, allow_changed_settings=False):
    """Before training resumes from a checkpoint: what changed since the run was started.

    Raises a `UsageError` listing the changes, unless `allow_changed_settings`: then they are
    logged and returned, and the caller goes on with the new settings (the schedule is
    recomputed from them).
    """
    saved = load(model_dir)
    if saved is None:
        return []
    changed = differences(saved, current, MODEL_KEYS + TRAINING_KEYS)
    if changed and not allow_changed_settings:
        raise UsageError(
            f"{model_dir} holds a run with other settings; resuming it would mix them:\n  "
            + "\n  ".join(changed)
            + "\nUse a new `model_dir`, rerun with the old settings (MODEL_DIR/flags.txt), or "
              "pass `allow_changed_settings` to go on with the new ones.")
    for line in changed:
        logging.warning("resuming %s with a changed setting: %s", model_dir, line)
        print(f"warning: resuming with a changed setting: {line}")
    return changed


def start_training(model_dir, record, allow_changed_settings=False, chief=True):
    """At the start of training: checks a resume against the saved record (`check_resume`), then
    saves `record` (chief only). Returns the changed settings that were allowed."""
    changed = []
    if tf.train.latest_checkpoint(fs.join(model_dir, "checkpoints")):
        changed = check_resume(model_dir, record, allow_changed_settings)
    if chief:
        save(model_dir, record)
    return changed


def check_restore(model_dir, current):
    """Before eval / predict / export: the model being restored is the one that was trained."""
    saved = load(model_dir)
    if saved is None:
        return
    changed = differences(saved, current, MODEL_KEYS)
    if changed:
        raise UsageError(
            f"{model_dir} was trained with another model than this run builds:\n  "
            + "\n  ".join(changed)
            + "\nPass the flags it was trained with (MODEL_DIR/flags.txt).")
