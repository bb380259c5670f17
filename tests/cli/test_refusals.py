"""A user's mistakes through the `zoo` command: each run stops before any work with one
`error:` line that names the flag or file, and no traceback. The command runs in this process
(`zoo_cli`) on freshly defined flags; tests/tasks keep the end-to-end runs in processes of
their own."""
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, exit_code_inline
from tests.tweets import LABEL_MAP, write_csv
from zoo.cli import main

COMMON = ("--encoder_handle=tiny", "--text_column=tweet", "--label_column=sentiment",
          "--train_batch_size=8", "--max_seq_length=32", f"--label_map={LABEL_MAP}")


def zoo_cli(capsys, *argv):
    """`zoo ARGV` in this process: (the exit message, or None for success; stdout; stderr)."""
    code = exit_code_inline(lambda: main.run(list(argv)))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err[-3000:]
    return code, out, err


def refused(capsys, *argv):
    """The `error:` line of a run that must stop (and did no work)."""
    code, out, _ = zoo_cli(capsys, *argv)
    assert isinstance(code, str) and code.startswith("error: "), (code, out[-2000:])
    return code


@pytest.mark.parametrize("flag,message", [
    ("--learning_rate=-1", "--learning_rate must be more than 0, not -1.0"),
    ("--learning_rate=nan", "--learning_rate must be a finite number, not nan"),
    ("--max_train_steps=-1", "--max_train_steps must be at least 0, not -1"),
    ("--train_batch_size=0", "--train_batch_size must be at least 1, not 0"),
    ("--gradient_accumulation_steps=0", "--gradient_accumulation_steps must be at least 1, "
                                         "not 0"),
    ("--eval_batch_size=0", "--eval_batch_size must be at least 1, not 0"),
    ("--num_train_epochs=inf", "--num_train_epochs must be a finite number, not inf"),
    ("--num_train_epochs=nan", "--num_train_epochs must be a finite number, not nan"),
    ("--dropout=1.5", "--dropout must be at least 0 and less than 1, not 1.5"),
    ("--warmup_proportion=2", "--warmup_proportion must be at least 0 and at most 1, not 2.0"),
    ("--max_seq_length=0", "--max_seq_length must be at least 3, not 0"),
    ("--max_seq_length=-5", "--max_seq_length must be at least 3, not -5"),
    ("--delimiter=||", "--delimiter must be one character (or 'tab'), not '||'"),
    ("--keep_best=acuracy", "--keep_best=acuracy is not a metric of this task; it reports "
                            "accuracy, f1, f1_macro, f1_weighted, mcc, loss (eval_loss is loss)"),
])
def test_a_flag_out_of_range_is_refused_before_any_work(tweets, tmp_path, capsys, flag,
                                                         message):
    model_dir = tmp_path / "model"
    assert refused(capsys, "train", "classify", *COMMON, f"--model_dir={model_dir}",
                   f"--train_file={tweets['train']}", f"--eval_file={tweets['dev']}",
                   flag) == f"error: {message}"
    assert not model_dir.exists()  # nothing was started


def test_a_threshold_that_no_probability_reaches_is_refused(tmp_path, capsys):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n" + "".join(f"row {i},\"a,b\"\n" for i in range(20)))
    for mode in ("train", "predict"):
        assert refused(capsys, mode, "classify", "--task_type=multi_label", "--threshold=2",
                       f"--train_file={data}", f"--predict_file={data}",
                       f"--model_dir={tmp_path / 'm'}", "--output_file=out.csv") == (
            "error: --threshold must be more than 0 and less than 1, not 2.0")


def test_squad_doc_stride_must_move(tmp_path, capsys):
    assert refused(capsys, "train", "squad", f"--model_dir={tmp_path / 'm'}",
                   "--train_file=x.json", "--doc_stride=0") == (
        "error: --doc_stride must be at least 1, not 0")


def test_paths_that_cannot_work(tweets, tmp_path, capsys):
    train = f"--train_file={tweets['train']}"
    assert refused(capsys, "train", "classify", *COMMON, f"--model_dir={tmp_path / 'm'}",
                   f"--train_file={tweets['root']}") == (
        f"error: {tweets['root']}: a directory, not a file (give its files, e.g. "
        f"{tweets['root']}/*.csv)")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert refused(capsys, "train", "classify", *COMMON, f"--model_dir={a_file}", train) == (
        f"error: --model_dir={a_file} is a file, not a directory")
    missing = tmp_path / "never_trained"
    for command in ("predict", "export", "eval"):
        assert refused(capsys, command, "classify", *COMMON, f"--model_dir={missing}",
                       f"--predict_file={tweets['predict']}", f"--eval_file={tweets['dev']}",
                       f"--output_file={tmp_path / 'out.csv'}", "--export_dir=e") == (
            f"error: --model_dir={missing} does not exist: --mode={main.MODES[command]} needs "
            "the model dir of a trained model")
        assert not missing.exists()  # not created either


def test_a_model_dir_that_cannot_be_written(tmp_path, monkeypatch):
    from zoo.base.errors import UsageError
    from zoo.base import fs
    from zoo.run import paths
    monkeypatch.setattr(fs.os, "access", lambda path, mode: False)  # tests run as root
    with pytest.raises(UsageError, match="is not writable: mode=train writes into it"):
        paths.prepare_model_dir(str(tmp_path), "train")
    paths.prepare_model_dir(str(tmp_path), "predict")  # reading it is enough


@pytest.fixture(scope="module")
def trained(tweets, tiny_hub):
    """A model dir trained for 4 steps, in this process."""
    from zoo.kinds import table
    model_dir = str(tweets["root"] / "trained")
    table.run("classify", "train", model_dir=model_dir, encoder_handle="tiny",
              text_column="tweet", label_column="sentiment", label_map=LABEL_MAP,
              train_file=tweets["train"], train_batch_size=8, max_seq_length=32,
              max_train_steps=4)
    return model_dir


def _files(folder):
    return {os.path.join(root, name): os.stat(os.path.join(root, name)).st_mtime_ns
            for root, _, names in os.walk(folder) for name in names}


def test_predict_guards_its_input_and_writes_nothing_into_the_model_dir(trained, tweets,
                                                                       tmp_path, capsys):
    args = ("predict", "classify", *COMMON, f"--model_dir={trained}", "--id_column=id")
    before = _files(trained)
    assert refused(capsys, *args, f"--predict_file={tweets['predict']}",
                   f"--output_file={tweets['predict']}") == (
        f"error: --output_file={tweets['predict']} is the input file {tweets['predict']}: the "
        "predictions would overwrite the data; give another file")
    assert refused(capsys, *args, f"--predict_file={tweets['predict']}",
                   f"--output_file={tmp_path}") == (
        f"error: --output_file={tmp_path} is a directory; give a file name")
    # a broken quote on line 6: the 22 other rows are predicted, line 6 is rejected, in place
    rows = open(tweets["predict"], encoding="utf-8").read().splitlines()
    rows[5] = '"' + rows[5]
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.csv"
    code, printed, _ = zoo_cli(capsys, *args, f"--predict_file={broken}", f"--output_file={out}",
                               "--bad_rows=skip")
    assert code is None, code
    assert "predict: 23 input rows = 22 predicted + 1 rejected" in printed
    written = open(out, encoding="utf-8").read().splitlines()
    assert len(written) == 24 and written[5].startswith(",,,") and f"{broken}:6" in written[5]
    assert [line.split(",")[0] for line in written[1:]] == [
        r.split(",")[0] for r in rows[1:5]] + [""] + [r.split(",")[0] for r in rows[6:]]
    assert _files(trained) == before  # no flags_predict.txt, no lock: a read-only dir serves


def test_a_second_writer_is_refused_while_the_first_lives(trained, tweets, capsys):
    holder = subprocess.Popen(  # a real process holding the model dir's lock
        [sys.executable, "-c", "import sys, time\nfrom zoo.run import lock\n"
         "with lock.held(sys.argv[1], 'train'):\n    print('held', flush=True)\n"
         "    time.sleep(600)\n", trained], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        message = refused(capsys, "eval", "classify", *COMMON, f"--model_dir={trained}",
                          f"--eval_file={tweets['dev']}")
        assert message.startswith(f"error: {trained} is in use by another run (--mode=train, "
                                  f"process {holder.pid} on ")
    finally:
        holder.kill()  # SIGKILL: the lock must not outlive its process
        holder.wait()
    code, out, _ = zoo_cli(capsys, "eval", "classify", *COMMON, f"--model_dir={trained}",
                           f"--eval_file={tweets['dev']}")
    assert code is None and "evaluated step 4 in" in out
    assert json.load(open(os.path.join(trained, ".lock")))["mode"] == "eval"


def test_float_labels_of_one_number_are_refused(tmp_path, capsys):
    data = tmp_path / "train.csv"
    data.write_text("text,label\n" + "".join(f"row {i},{['0', '0.0', '1', '1.0'][i % 4]}\n"
                                             for i in range(24)))
    message = refused(capsys, "train", "classify", "--mode=train", "--encoder_handle=tiny",
                      f"--train_file={data}", f"--model_dir={tmp_path / 'm'}")
    assert message.startswith("error: the training data's labels '0' and '0.0' are one number")


def test_a_tagger_needs_entity_tags(tmp_path, capsys):
    data = tmp_path / "train.txt"
    data.write_text("".join(f"word{i} O\nother O\n\n" for i in range(20)))
    message = refused(capsys, "train", "tagging", "--mode=train", "--encoder_handle=tiny",
                      f"--train_file={data}", f"--model_dir={tmp_path / 'm'}",
                      "--train_batch_size=4")
    assert message.endswith("every tag of the training data is O; a tagger needs entity tags "
                            "(B-X, I-X) to learn") and str(data) in message


def test_an_encoder_shorter_than_max_seq_length_is_refused_before_training(tweets, tmp_path,
                                                                           capsys):
    message = refused(capsys, "train", "classify", "--mode=train", *COMMON[:-2],
                      "--max_seq_length=600",
                      f"--label_map={LABEL_MAP}", f"--train_file={tweets['train']}",
                      f"--model_dir={tmp_path / 'm'}")
    assert message.startswith("error: --max_seq_length=600 is more than the 512 positions of "
                              "the encoder ")
    assert not (tmp_path / "m" / "checkpoints").exists()


def test_a_diverging_run_stops_at_its_step_and_saves_nothing(tweets, tiny_hub, tmp_path,
                                                             capsys):
    big = write_csv(tmp_path / "big.csv", 64, 5)
    model_dir = tmp_path / "m"
    message = refused(capsys, "train", "classify", "--mode=train", *COMMON,
                      f"--model_dir={model_dir}", f"--train_file={big}", "--learning_rate=1e30",
                      "--warmup_proportion=0", "--num_train_epochs=1", f"--export_dir={tmp_path / 'export'}")
    assert message.startswith("error: training step ")
    assert "the loss is nan" in message or "the loss is inf" in message  # fp32 may overflow
    assert "nothing after the start was saved" in message and "--learning_rate" in message
    assert not os.listdir(model_dir / "checkpoints") if (model_dir / "checkpoints").exists() \
        else True
    assert not (tmp_path / "export").exists()
