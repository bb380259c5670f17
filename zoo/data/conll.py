"""CoNLL-style token tagging files: one token per line (its tag in the last column), a blank line
between sentences, `-DOCSTART-` lines skipped.

Columns are separated by white space (CoNLL-2003: `word POS chunk NER`; WNUT-17: `word<TAB>tag`).
Tags are `O`, `B-TYPE` or `I-TYPE` in IOB2 (BIO) or IOB1; they are read as the CoNLL scorer
reads them, so both schemes come out as IOB2: an `I-TYPE` that does not continue an entity of
its type starts one (`B-TYPE`). A sentence with a problem (a token line without a tag, a tag
that is not O/B-/I-, invalid UTF-8) becomes a `BadRow` naming its file, line and problem; files
to predict on need no tags.
"""
import dataclasses
from typing import List, Optional

from zoo.base import fs
from zoo.data.sources import expand_shards
from zoo.data.text_files import BadRow, check_file


@dataclasses.dataclass(frozen=True)
class Sentence:
    """A sentence's tokens and tags; as a row of text (`text_a`: the tokens joined by spaces,
    `label`: its tags) it goes through the data check as a text row does."""

    tokens: List[str]
    tags: Optional[List[str]] = None
    source: str = ""  # "file:line" of its first token
    id: Optional[str] = None
    text_b = None

    @property
    def text_a(self):
        return " ".join(self.tokens)

    @property
    def label(self):
        return tuple(self.tags) if self.tags is not None else None


def entity_type(tag):
    """"PER" of "B-PER" or "I-PER"; None of "O"."""
    return None if tag == "O" else tag[2:]


def to_iob2(tags):
    """Tags as the CoNLL scorer reads them, in IOB2: an I-X after O or another type is a B-X."""
    result, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        result.append(tag)
        previous = tag
    return result


def _tag_problem(tag):
    if tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2):
        return None
    return f"tag {tag!r} is not O, B-TYPE or I-TYPE (IOB1/IOB2)"


def iter_conll(path, require_tags=True):
    """Yields a `Sentence` or a `BadRow` for every sentence of a CoNLL file, in order."""
    tokens, tags, problem, first = [], [], None, None

    def sentence():
        if problem:
            return BadRow(f"{path}:{problem[0]}", problem[1], " ".join(tokens))
        return Sentence(tokens, to_iob2(tags) if tags else None, f"{path}:{first}")

    check_file(path)
    with fs.open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                # a bad sentence; its tokens are kept (as U+FFFD) so that predict can write
                # every one of them back
                line = raw.decode("utf-8", errors="replace")
                problem = problem or (number, f"invalid UTF-8 at byte {e.start}")
            if line.startswith("-DOCSTART-"):
                continue
            if not line.strip():
                if tokens or problem:
                    yield sentence()
                tokens, tags, problem, first = [], [], None, None
                continue
            first = first or number
            parts = line.split()
            tokens.append(parts[0])
            if len(parts) >= 2:
                tags.append(parts[-1])
                if require_tags and not problem and _tag_problem(parts[-1]):
                    problem = (number, _tag_problem(parts[-1]))
            elif require_tags and not problem:
                problem = (number, f"a token line needs a token and a tag, found {line.strip()!r}")
    if tokens or problem:
        yield sentence()


class ConllSource:
    """Shards of CoNLL files (a glob, or comma-separated globs/files), read sentence by
    sentence; the interface of `zoo.data.sources.FileSource`."""

    def __init__(self, pattern, require_tags=True):
        self.pattern = pattern
        self.require_tags = require_tags
        self.shards = expand_shards(pattern)
        self.pair = False
        self.has_id = False

    def read(self, shard_index):
        for item in iter_conll(self.shards[shard_index], self.require_tags):
            if isinstance(item, Sentence) and not self.require_tags:
                item = dataclasses.replace(item, tags=None)
            yield item

    def __repr__(self):
        return f"ConllSource({self.pattern!r}, {len(self.shards)} shard(s))"
