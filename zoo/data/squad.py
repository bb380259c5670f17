"""SQuAD JSON read as a stream: one article at a time, never the whole file.

`SquadFile` walks the file's top-level object and parses each article of its `data` list alone
(the JSON decoder on a bounded buffer), checks every question as it goes, and remembers where
each article starts and ends. Training reads the articles again in a seeded random order by
seeking to them. Memory holds one article (a few hundred KB), however large the file.

Every problem names the file and the place: `FILE:LINE: not valid JSON (...)`, or
`FILE: data[a].paragraphs[p].qas[q] (id ...): what is wrong`.
"""
import codecs
import dataclasses
import itertools
import json
import re
from typing import List, Tuple

import numpy as np

from zoo.base import fs
from zoo.data.fingerprint import data_fingerprint
from zoo.data.text_files import DataError, check_file

CHUNK_BYTES = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")


@dataclasses.dataclass
class SquadExample:
    id: str
    question: str
    context: str
    answers: List[Tuple[str, int]]  # (text, character start in context)
    source: str = ""
    is_impossible: bool = False  # SQuAD 2.0: the context does not answer the question
    article: int = 0  # index of its article in the file


@dataclasses.dataclass(frozen=True)
class Article:
    """Where an article is in the file, and how many of its questions are used."""

    offset: int  # bytes
    length: int  # bytes
    questions: int


class _Reader:
    """A UTF-8 JSON text read in chunks: the values of its top-level object one by one."""

    def __init__(self, f, path):
        self.f, self.path = f, path
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos = "", 0
        self.base_bytes, self.base_line = 0, 1  # of text[0]
        self.eof = False
        self.first = True

    def _more(self):
        chunk = self.f.read(CHUNK_BYTES)
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as e:
            raise DataError(f"{self.path}: invalid UTF-8 near byte "
                            f"{self.base_bytes + len(self.text.encode('utf-8')) + e.start}") \
                from None
        if self.first and text:
            self.first = False
            if text.startswith("\ufeff"):  # a byte-order mark: not part of the JSON
                text = text[1:]
                self.base_bytes += 3
        self.text += text
        self.eof = not chunk

    def line(self, pos=None):
        return self.base_line + self.text.count("\n", 0, self.pos if pos is None else pos)

    def bytes_at(self, pos):
        return self.base_bytes + len(self.text[:pos].encode("utf-8"))

    def forget(self):
        """Drops the text already read (called between articles)."""
        self.base_bytes = self.bytes_at(self.pos)
        self.base_line = self.line()
        self.text, self.pos = self.text[self.pos:], 0

    def error(self, message, pos=None):
        return DataError(f"{self.path}:{self.line(pos)}: not valid JSON ({message})")

    def peek(self):
        """The next character that is not white space ("" at the end)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text) or self.eof:
                return self.text[self.pos:self.pos + 1]
            self._more()

    def expect(self, char):
        if self.peek() != char:
            found = self.peek() or "the end of the file"
            raise self.error(f"expected {char!r}, found {found!r}")
        self.pos += 1

    def value(self):
        """The next JSON value: (value, start position)."""
        self.peek()
        while True:
            try:
                value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
            except json.JSONDecodeError as e:
                if self.eof:
                    raise self.error(e.msg, e.pos) from None
                self._more()
                continue
            if end == len(self.text) and not self.eof:  # a number may go on in the next chunk
                self._more()
                continue
            start, self.pos = self.pos, end
            return value, start


def _examples(article, a, path, require_answers, version_2=False):
    """The checked `SquadExample`s of article number `a`."""
    if not isinstance(article, dict):
        raise DataError(f"{path}: data[{a}]: expected an article object")
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
                if not isinstance(start, int) or start < 0 \
                        or context[start:start + len(text)] != text:
                    raise DataError(f"{place} (id {qa['id']}): answer {text!r} is not at "
                                    f"character {start} of the context")
                answers.append((text, start))
            impossible = bool(qa.get("is_impossible", False))
            if impossible and not version_2:
                raise DataError(f"{place} (id {qa['id']}): an unanswerable question "
                                "(is_impossible) in SQuAD v1.1 data; for SQuAD 2.0 pass "
                                "`version_2_with_negative`")
            if impossible and answers:
                raise DataError(f"{place} (id {qa['id']}): marked is_impossible but has "
                                f"{len(answers)} answer(s)")
            if require_answers and not impossible and not answers:
                raise DataError(f"{place} (id {qa['id']}): no answers")
            yield SquadExample(str(qa["id"]), qa["question"], context, answers, place,
                               impossible, a)


class SquadFile:
    """A SQuAD v1.1 JSON file as a stream of checked `SquadExample`s.

    Args:
        path: the JSON file.
        require_answers: whether a question without answers is an error (train and eval),
            unless it is marked unanswerable (`is_impossible`, SQuAD 2.0).
        max_questions: use only the first N questions in file order (0: all).
        version_2: SQuAD 2.0: questions may be unanswerable (`is_impossible`).

    `questions()` reads the file in order (and indexes its articles on the way);
    `questions(order)` reads the indexed articles in the given order of article numbers.
    """

    def __init__(self, path, require_answers=True, max_questions=0, version_2=False):
        self.path = path
        self.require_answers = require_answers
        self.max_questions = max_questions
        self.version_2 = version_2
        self.articles = None  # [Article], once the file has been read in order

    def questions(self, order=None):
        if order is None:
            yield from self._in_file_order()
            return
        if self.articles is None:
            for _ in self._in_file_order():
                pass
        with fs.open(self.path, "rb") as f:
            for a in order:
                article = self.articles[a]
                f.seek(article.offset)
                parsed = json.loads(f.read(article.length).decode("utf-8"))
                examples = _examples(parsed, a, self.path, self.require_answers,
                                     self.version_2)
                for _, example in zip(range(article.questions), examples):
                    yield example

    def _in_file_order(self):
        articles, count = [], 0
        check_file(self.path)
        with fs.open(self.path, "rb") as f:
            reader = _Reader(f, self.path)
            if reader.peek() != "{":
                raise DataError(f"{self.path}: expected SQuAD JSON with a top-level 'data' list")
            reader.expect("{")
            found_data = False
            while reader.peek() != "}":
                key, start = reader.value()
                if not isinstance(key, str):
                    raise reader.error("expected a key in double quotes", start)
                reader.expect(":")
                if key != "data" or reader.peek() != "[":
                    reader.value()  # "version", or anything else: skipped
                else:
                    found_data = True
                    reader.expect("[")
                    while reader.peek() != "]":
                        reader.forget()
                        article, start = reader.value()
                        offset = reader.bytes_at(start)
                        used = 0
                        for example in _examples(article, len(articles), self.path,
                                                 self.require_answers, self.version_2):
                            if self.max_questions and count >= self.max_questions:
                                break
                            used += 1
                            count += 1
                            yield example
                        articles.append(Article(offset, reader.bytes_at(reader.pos) - offset, used))
                        if reader.peek() == ",":
                            reader.expect(",")
                    reader.expect("]")
                if reader.peek() == ",":
                    reader.expect(",")
            reader.expect("}")
        if not found_data:
            raise DataError(f"{self.path}: expected SQuAD JSON with a top-level 'data' list")
        self.articles = articles

    def fingerprint(self):
        """What identifies the training data in MODEL_DIR/run.json."""
        return dict(files=data_fingerprint(files=[self.path]),
                    max_questions=self.max_questions)

    def __repr__(self):
        return f"SquadFile({self.path!r})"


class SquadList:
    """Questions already in memory, with the interface of `SquadFile` (one "article")."""

    def __init__(self, examples, name="examples"):
        self.examples = list(examples)
        self.name = name
        self.articles = [Article(0, 0, len(self.examples))]

    def questions(self, order=None):
        del order
        return iter(self.examples)

    def fingerprint(self):
        return data_fingerprint(examples=self.examples)

    def __repr__(self):
        return f"SquadList({self.name!r}, {len(self.examples)} questions)"


def read_squad(path, require_answers=True, version_2=False):
    """All questions of a SQuAD JSON file, as a list (small files; `SquadFile` streams)."""
    return list(SquadFile(path, require_answers, version_2=version_2).questions())


class WithUnanswerable:
    """A source of answerable questions plus unanswerable ones made from them (SQuAD 2.0
    training without SQuAD 2.0 training data).

    For a `fraction` of the questions of each article (chosen with `seed` and the article's
    number, so in any reading order the same), a copy marked unanswerable is paired with
    another paragraph of the same article that contains none of its answers (the question
    is about something else there). The copy's id is the question's id + "_unanswerable".
    """

    def __init__(self, source, fraction, seed=0):
        self.source = source
        self.fraction = fraction
        self.seed = seed

    @property
    def articles(self):
        return self.source.articles

    def questions(self, order=None):
        article, examples = None, []
        for example in itertools.chain(self.source.questions(order), [None]):
            if example is None or example.article != article:
                yield from examples
                yield from self._unanswerable(examples)
                if example is None:
                    return
                article, examples = example.article, []
            examples.append(example)

    def _unanswerable(self, examples):
        if not examples:
            return
        rng = np.random.default_rng([self.seed, examples[0].article])
        contexts = list(dict.fromkeys(e.context for e in examples))
        for example in examples:
            if rng.random() >= self.fraction:
                continue
            others = [c for c in contexts if c != example.context
                      and not any(text in c for text, _ in example.answers)]
            if others:
                yield SquadExample(f"{example.id}_unanswerable", example.question,
                                   others[rng.integers(len(others))], [],
                                   f"{example.source} (unanswerable copy)", True,
                                   example.article)

    def fingerprint(self):
        return dict(self.source.fingerprint(), unanswerable_fraction=self.fraction,
                    unanswerable_seed=self.seed)

    def __repr__(self):
        return f"WithUnanswerable({self.source!r}, {self.fraction})"
