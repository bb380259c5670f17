"""A plain-Python BERT tokenizer, written from the published algorithm of Google's BERT
(`tokenization.py`: clean text, split CJK ideographs, split on white space, lower-case and strip
accents if uncased, split punctuation, then greedy longest-match WordPiece): the oracle that the
preprocessor's tensorflow_text tokenization is checked against for any vocabulary."""
import unicodedata

CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_whitespace(char):
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char):
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char):
    return any(low <= ord(char) <= high for low, high in CJK_RANGES)


def words(text, lower_case):
    """The basic tokenizer: the words (before WordPiece) of `text`."""
    text = "".join(" " if _is_whitespace(c) else c for c in text
                   if ord(c) not in (0, 0xFFFD) and not _is_control(c))
    text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
    result = []
    for token in text.split():
        if lower_case:
            token = "".join(c for c in unicodedata.normalize("NFD", token.lower())
                            if unicodedata.category(c) != "Mn")
        current = ""
        for char in token:
            if _is_punctuation(char):
                result += [current] if current else []
                result.append(char)
                current = ""
            else:
                current += char
        result += [current] if current else []
    return result


def wordpieces(word, vocab, unknown="[UNK]", max_chars=100):
    """Greedy longest-match-first WordPiece of one word."""
    if len(word) > max_chars:
        return [unknown]
    pieces, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            piece = ("##" if start else "") + word[start:end]
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return [unknown]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab, lower_case):
    """Per word, its wordpiece ids (`vocab`: {token: id})."""
    return [[vocab[p] for p in wordpieces(w, vocab)] for w in words(text, lower_case)]
