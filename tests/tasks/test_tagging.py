"""tasks.tagging.train as a user runs it: train_and_eval, predict (a tag per token, in order),
the export's words and entities against predict, bad input."""
import json
import os
import random

import pytest
import tensorflow as tf

from tests.helpers import run_inline

PEOPLE = ["John", "Mary", "Ahmed", "Olga"]
PLACES = [["Paris"], ["Berlin"], ["New", "York"], ["U.S."]]
FILLER = ["went", "to", "see", "the", "show", "in", "yesterday", "with", "friends"]


def _sentences(n, seed):
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        tokens, tags = [], []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.5:
                tokens.append(rng.choice(PEOPLE))
                tags.append("B-PER")
            else:
                place = rng.choice(PLACES)
                tokens += place
                tags += ["B-LOC"] + ["I-LOC"] * (len(place) - 1)
            filler = rng.sample(FILLER, rng.randint(1, 3))
            tokens += filler
            tags += ["O"] * len(filler)
        sentences.append((tokens, tags))
    return sentences


def _write(path, sentences, tags=True):
    with open(path, "w", encoding="utf-8") as f:
        f.write("-DOCSTART- -X- O O\n\n")
        for tokens, labels in sentences:
            f.writelines(f"{t} NN O {tag}\n" if tags else f"{t}\n" for t, tag in zip(tokens, labels))
            f.write("\n")
    return str(path)


def _tagging(model_dir, *extra):
    return run_inline("tasks.tagging.train", f"--model_dir={model_dir}", "--encoder_handle=tiny",
                      "--max_seq_length=32", "--doc_stride=16", "--train_batch_size=16",
                      "--eval_batch_size=8", *extra)  # several eval batches of other widths


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_hub):
    root = tmp_path_factory.mktemp("ner")
    dev = _sentences(30, 2)
    # tokens that give no word (a lone accent, a zero-width space): tagged O by predict,
    # absent from the export's words
    dev[3] = (dev[3][0][:1] + ["\u00b4", "\u200b"] + dev[3][0][1:],
              dev[3][1][:1] + ["O", "O"] + dev[3][1][1:])
    # one sentence far longer than a window (--max_seq_length=32): predicted in windows
    dev.append(tuple(sum((list(part) for part in parts), []) for parts in zip(*dev[:8])))
    files = dict(train=_write(root / "train.txt", _sentences(800, 1)),  # 100 steps in 2 epochs
                 dev=_write(root / "dev.txt", dev), test=_write(root / "test.txt", dev, False))
    model_dir = str(root / "model")
    result = _tagging(model_dir, f"--train_file={files['train']}", f"--eval_file={files['dev']}",
                      "--num_train_epochs=2", "--learning_rate=3e-3", "--warmup_proportion=0.05",
                      f"--export_dir={model_dir}/export/1")
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(model_dir=model_dir, dev_sentences=dev, **files)


def test_entity_f1_per_type_and_token_accuracy(trained):
    results = json.load(open(os.path.join(trained["model_dir"], "eval_results.json")))
    assert set(results["per_type"]) == {"LOC", "PER"}
    # Names and places are fixed words: a model that learned nothing finds no entity.
    assert results["f1"] > 0.9 and results["token_accuracy"] > 0.95, results
    timing = json.load(open(os.path.join(trained["model_dir"], "train_results.json")))
    assert timing["train_sentences"] == 800 and timing["train_windows"] >= 800


def test_predict_tags_every_token_in_order_and_the_export_agrees(trained):
    output = os.path.join(trained["model_dir"], "test_tags.txt")
    result = _tagging(trained["model_dir"], "--mode=predict",
                      f"--predict_file={trained['test']}", f"--output_file={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    blocks = open(output).read().strip("\n").split("\n\n")
    predicted = [[line.split("\t") for line in block.split("\n")] for block in blocks]
    assert [[t for t, _ in s] for s in predicted] == [s[0] for s in trained["dev_sentences"]]
    right = sum(p == g for s, (_, gold) in zip(predicted, trained["dev_sentences"])
                for (_, p), g in zip(s, gold))
    assert right > 0.95 * sum(len(g) for _, g in trained["dev_sentences"])
    texts = [" ".join(tokens) for tokens, _ in trained["dev_sentences"]]
    # (loaded in this process: an export loaded in a fresh process, as a server does, is in
    # tests/export/test_savedmodel.py and tests/tasks/test_squad.py)
    fn = tf.saved_model.load(os.path.join(trained["model_dir"], "export", "1")).signatures[
        "serving_default"]
    out = {k: (v.numpy().tolist() if v.dtype != tf.string else
               [[x.decode() for x in row] for row in v.numpy()])
           for k, v in fn(text=tf.constant(texts)).items()}
    for row, (text, sentence) in enumerate(zip(texts, predicted)):
        # the word starting where each token starts has the token's tag
        starts, offset = {}, 0
        for token, _ in sentence:
            starts[offset] = token
            offset += len(token) + 1
        words = {s: tag for s, tag in zip(out["word_start"][row], out["tags"][row]) if s >= 0}
        # a token that gives no word has no word in the export, and O from predict
        assert [words.get(s, "O") for s in starts] == [tag for _, tag in sentence]
        missing = [token for s, token in starts.items() if s not in words]
        assert missing == [t for t, _ in sentence if t in ("\u00b4", "\u200b")]
        for i in range(out["num_entities"][row]):
            start, end = out["entity_start"][row][i], out["entity_end"][row][i]
            assert text[start:end] == out["entity_text"][row][i]
            assert out["entity_type"][row][i] in ("LOC", "PER")
            assert 0 < out["entity_score"][row][i] <= 1
    assert sum(out["num_entities"]) > 0


def test_a_tag_outside_the_tag_set_names_the_file_and_line(trained, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("John NN O B-PER\nsmiled NN O B-EMOTION\n\n")
    result = _tagging(trained["model_dir"], "--mode=eval", f"--eval_file={path}")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {path}:1: tag 'B-EMOTION' is not in the training data's tags" in \
        result.stderr


def test_long_sentences_are_windowed_and_a_bad_sentence_keeps_its_lines(trained, tmp_path):
    long_tokens = trained["dev_sentences"][-1][0]
    assert len(long_tokens) > 40  # more than one window of 32 wordpieces
    path = tmp_path / "predict.txt"
    path.write_bytes(b"Paris\nis\n\nbad\nrow\xff\nhere\n\n" + "\n".join(long_tokens).encode()
                     + b"\n")
    output = str(tmp_path / "tags.txt")
    result = _tagging(trained["model_dir"], "--mode=predict", f"--predict_file={path}",
                      f"--output_file={output}", "--bad_rows=skip")
    assert result.returncode == 0, result.stderr[-3000:]
    blocks = open(output, encoding="utf-8").read().strip("\n").split("\n\n")
    assert len(blocks) == 3
    assert [line.split("\t")[0] for line in blocks[0].split("\n")] == ["Paris", "is"]
    error, *lines = blocks[1].split("\n")
    assert error == f"# error: {path}:5: invalid UTF-8 at byte 3"
    assert [line.split("\t") for line in lines] == [["bad", ""], ["row\ufffd", ""],
                                                     ["here", ""]]
    tagged = [line.split("\t") for line in blocks[2].split("\n")]
    assert [t for t, _ in tagged] == long_tokens and all(tag for _, tag in tagged)
    result = _tagging(trained["model_dir"], "--mode=predict", f"--predict_file={path}",
                      f"--output_file={output}.2")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"error: {path}:5: invalid UTF-8 at byte 3" in result.stderr
