"""SQuAD v1.1: reading the JSON, and cutting (question, context) pairs into model windows.

Tokenization is the preprocessor's own (`tokenize` for questions, `tokenize_with_offsets` for
contexts: tensorflow_text, offsets into the original text), run in batches; nothing here splits
words by hand. A context longer than one window is covered by overlapping windows whose starts
are `doc_stride` tokens apart (the stride is the *step* between window starts, as in Google's
BERT; Hugging Face's `stride` is the overlap instead).
"""
import dataclasses
import json
from typing import List, Tuple

import numpy as np
import tensorflow as tf

from zoo.data.text_files import DataError
from zoo.errors import UsageError


@dataclasses.dataclass
class SquadExample:
    id: str
    question: str
    context: str
    answers: List[Tuple[str, int]]  # (text, character start in context)
    source: str = ""


@dataclasses.dataclass
class Window:
    """One model input: [CLS] question [SEP] part of the context [SEP], padded."""

    example_index: int
    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    # Per sequence position: character span in the context, or (-1, -1) outside the context.
    char_starts: np.ndarray
    char_ends: np.ndarray
    # Per sequence position: True where this window gives the token its widest context.
    max_context: np.ndarray
    start_position: int = 0  # training target (0: [CLS], the answer is not in this window)
    end_position: int = 0


def read_squad(path, require_answers=True):
    """Reads SQuAD v1.1 JSON; errors name the file and the article/paragraph/question."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: invalid UTF-8 at byte {e.start}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{path}: expected SQuAD JSON with a top-level 'data' list")
    examples = []
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if not isinstance(context, str) or not context.strip():
                raise DataError(f"{where}: empty or missing context")
            for q, qa in enumerate(paragraph.get("qas", [])):
                place = f"{where}.qas[{q}]"
                if not qa.get("id") or not str(qa.get("question", "")).strip():
                    raise DataError(f"{place}: missing id or question")
                answers = []
                for answer in qa.get("answers", []):
                    text, start = answer.get("text", ""), answer.get("answer_start", -1)
                    if context[start:start + len(text)] != text:
                        raise DataError(f"{place} (id {qa['id']}): answer {text!r} is not at "
                                        f"character {start} of the context")
                    answers.append((text, start))
                if require_answers and not answers:
                    raise DataError(f"{place} (id {qa['id']}): no answers")
                examples.append(SquadExample(str(qa["id"]), qa["question"], context, answers,
                                             place))
    return examples


def _char_offsets(text, byte_starts, byte_limits):
    """Byte offsets into `text`'s UTF-8 -> character offsets."""
    raw = text.encode("utf-8")
    char_of_byte = np.zeros(len(raw) + 1, np.int64)
    position = 0
    for char_index, char in enumerate(text):
        width = len(char.encode("utf-8"))
        char_of_byte[position:position + width] = char_index
        position += width
    char_of_byte[len(raw)] = len(text)
    return char_of_byte[np.asarray(byte_starts, np.int64)], char_of_byte[
        np.asarray(byte_limits, np.int64)]


def tokenize_examples(preprocessor, examples, batch_size=256):
    """Per example: question ids, context ids, and each context token's character span."""
    questions, contexts = [], []
    for begin in range(0, len(examples), batch_size):
        batch = examples[begin:begin + batch_size]
        q = preprocessor.tokenize(tf.constant([e.question for e in batch]))
        questions += q.merge_dims(-2, -1).to_list()
        ids, starts, limits = preprocessor.tokenize_with_offsets(
            tf.constant([e.context for e in batch]))
        for example, row_ids, row_starts, row_limits in zip(
                batch, ids.merge_dims(-2, -1).to_list(), starts.merge_dims(-2, -1).to_list(),
                limits.merge_dims(-2, -1).to_list()):
            char_starts, char_ends = _char_offsets(example.context, row_starts, row_limits)
            contexts.append((row_ids, char_starts, char_ends))
    return questions, contexts


def window_starts(num_tokens, max_tokens, doc_stride):
    """Starts of the windows covering `num_tokens` tokens, `doc_stride` apart (the step)."""
    starts = [0]
    while starts[-1] + max_tokens < num_tokens:
        starts.append(starts[-1] + min(doc_stride, max_tokens))
    return starts


def _max_context(starts, max_tokens, num_tokens):
    """best[t]: index of the window in which token t has the most context on its shorter side."""
    best, best_score = np.zeros(num_tokens, np.int64), np.full(num_tokens, -1.0)
    for w, start in enumerate(starts):
        end = min(start + max_tokens, num_tokens)
        positions = np.arange(start, end)
        length = end - start
        score = np.minimum(positions - start, end - 1 - positions) + 0.01 * length
        better = score > best_score[positions]
        best[positions[better]], best_score[positions[better]] = w, score[better]
    return best


def make_windows(preprocessor, examples, special_tokens, max_seq_length=384, doc_stride=128,
                 max_query_length=64, training=False):
    """Cuts every example into `Window`s (training targets set when `training`)."""
    cls, sep = special_tokens["start_of_sequence_id"], special_tokens["end_of_segment_id"]
    questions, contexts = tokenize_examples(preprocessor, examples)
    windows = []
    for index, (example, question, (ids, char_starts, char_ends)) in enumerate(
            zip(examples, questions, contexts)):
        question = question[:max_query_length]
        max_tokens = max_seq_length - len(question) - 3
        if max_tokens < 1:
            raise UsageError(f"max_seq_length {max_seq_length} leaves no room for the context "
                             f"after a {len(question)}-token question")
        starts = window_starts(len(ids), max_tokens, doc_stride)
        best = _max_context(starts, max_tokens, len(ids))
        answer_tokens = None
        if training and example.answers:
            text, char_start = example.answers[0]
            char_end = char_start + len(text)
            inside = np.nonzero((char_ends > char_start) & (char_starts < char_end))[0]
            if len(inside):
                answer_tokens = (int(inside[0]), int(inside[-1]))
        for w, start in enumerate(starts):
            piece = ids[start:start + max_tokens]
            offset = len(question) + 2  # position of the first context token
            tokens = [cls] + question + [sep] + piece + [sep]
            length = len(tokens)
            window = Window(
                example_index=index,
                input_word_ids=np.zeros(max_seq_length, np.int32),
                input_mask=np.zeros(max_seq_length, np.int32),
                input_type_ids=np.zeros(max_seq_length, np.int32),
                char_starts=np.full(max_seq_length, -1, np.int64),
                char_ends=np.full(max_seq_length, -1, np.int64),
                max_context=np.zeros(max_seq_length, bool))
            window.input_word_ids[:length] = tokens
            window.input_mask[:length] = 1
            window.input_type_ids[offset:length] = 1
            span = slice(offset, offset + len(piece))
            window.char_starts[span] = char_starts[start:start + len(piece)]
            window.char_ends[span] = char_ends[start:start + len(piece)]
            window.max_context[span] = best[start:start + len(piece)] == w
            if answer_tokens and start <= answer_tokens[0] and answer_tokens[1] < start + len(piece):
                window.start_position = answer_tokens[0] - start + offset
                window.end_position = answer_tokens[1] - start + offset
            windows.append(window)
    return windows
