"""SQuAD JSON read as a stream: checks that name the place, article order, the first N questions."""
import json

import pytest

from zoo.data import squad
from zoo.data.text_files import DataError


def _squad_file(tmp_path, paragraphs, name="squad.json", **extra):
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}], **extra}
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_read_squad(tmp_path):
    path = _squad_file(tmp_path, [{"context": "Paris is in France.", "qas": [
        {"id": "q1", "question": "Where is Paris?",
         "answers": [{"text": "France", "answer_start": 12}, {"text": "France.", "answer_start": 12}]}]}])
    (example,) = squad.read_squad(path)
    assert (example.id, example.answers) == ("q1", [("France", 12), ("France.", 12)])


@pytest.mark.parametrize("paragraph,message", [
    ({"context": "abc", "qas": [{"id": "x", "question": "q?",
                                 "answers": [{"text": "zz", "answer_start": 0}]}]},
     r"qas\[0\] \(id x\): answer 'zz' is not at character 0"),
    ({"context": " ", "qas": []}, r"paragraphs\[0\]: empty or missing context"),
    ({"context": "abc", "qas": [{"id": "x", "question": "q?", "answers": []}]}, "no answers"),
    ({"context": "abc", "qas": [{"id": "x", "question": "q?",
                                 "answers": [{"text": "a", "answer_start": "0"}]}]},
     r"answer 'a' is not at character 0"),
])
def test_bad_squad_names_the_place(tmp_path, paragraph, message):
    with pytest.raises(DataError, match=message):
        squad.read_squad(_squad_file(tmp_path, [paragraph]))


def test_invalid_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [\n  {"title": }]}')
    with pytest.raises(DataError, match=r"bad.json:2: not valid JSON"):
        squad.read_squad(str(path))


def test_invalid_json_deep_in_a_large_file_names_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(squad, "CHUNK_BYTES", 64)  # many chunks: the line count spans them
    articles = [{"title": f"a{i}", "paragraphs": [{"context": "x y z", "qas": [
        {"id": f"q{i}", "question": "q?", "answers": [{"text": "y", "answer_start": 2}]}]}]}
        for i in range(30)]
    text = json.dumps({"version": "1.1", "data": articles}, indent=1)
    lines = text.splitlines()
    broken = next(i for i, line in enumerate(lines) if '"q20"' in line)
    lines[broken] = lines[broken].replace('"q20"', "q20")
    path = tmp_path / "deep.json"
    path.write_text("\n".join(lines))
    with pytest.raises(DataError, match=rf"deep.json:{broken + 1}: not valid JSON"):
        list(squad.SquadFile(str(path)).questions())


def test_not_squad_json(tmp_path):
    for text in ('[1, 2]', '{"version": "1.1"}'):
        path = tmp_path / "other.json"
        path.write_text(text)
        with pytest.raises(DataError, match="expected SQuAD JSON with a top-level 'data' list"):
            squad.read_squad(str(path))
    with pytest.raises(DataError, match="missing.json: no such file"):
        squad.read_squad(str(tmp_path / "missing.json"))


def _articles(tmp_path, counts, **extra):
    articles = []
    for a, count in enumerate(counts):
        context = f"Article {a} is about the city of Rome and its 7 hills."
        articles.append({"title": f"a{a}", "paragraphs": [{"context": context, "qas": [
            {"id": f"a{a}q{q}", "question": f"Question {q}?",
             "answers": [{"text": "Rome", "answer_start": context.index("Rome")}]}
            for q in range(count)]}]})
    path = tmp_path / "articles.json"
    # a key after "data", a byte-order mark and non-ASCII text: offsets are bytes
    body = json.dumps({"data": articles, "version": "1.1", **extra}, ensure_ascii=False)
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    return str(path)


def test_articles_in_any_order_by_seeking_to_them(tmp_path):
    path = _articles(tmp_path, [3, 1, 2], note="café ünïcödé")
    source = squad.SquadFile(path)
    in_order = [e.id for e in source.questions()]
    assert in_order == ["a0q0", "a0q1", "a0q2", "a1q0", "a2q0", "a2q1"]
    assert [a.questions for a in source.articles] == [3, 1, 2]
    shuffled = [e.id for e in source.questions(order=[2, 0, 1])]
    assert shuffled == ["a2q0", "a2q1", "a0q0", "a0q1", "a0q2", "a1q0"]
    assert [e.source for e in source.questions([1])] == [f"{path}: data[1].paragraphs[0].qas[0]"]


def test_the_first_n_questions_whatever_the_order(tmp_path):
    source = squad.SquadFile(_articles(tmp_path, [3, 1, 2]), max_questions=4)
    assert [e.id for e in source.questions()] == ["a0q0", "a0q1", "a0q2", "a1q0"]
    assert sorted(e.id for e in source.questions([2, 1, 0])) == ["a0q0", "a0q1", "a0q2", "a1q0"]
    assert source.fingerprint()["max_questions"] == 4


def test_a_list_of_questions_is_a_source():
    examples = [squad.SquadExample("q", "?", "ctx", [])]
    source = squad.SquadList(examples)
    assert list(source.questions()) == examples and len(source.articles) == 1


def _v2_file(tmp_path, qas, name="v2.json"):
    context = "Paris is the capital of France. The Seine flows through it."
    data = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}]}]}
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


UNANSWERABLE = {"id": "u", "question": "What is the capital of Spain?", "answers": [],
                "is_impossible": True}
ANSWERABLE = {"id": "a", "question": "What is the capital of France?", "is_impossible": False,
              "answers": [{"text": "Paris", "answer_start": 0}]}


def test_squad_2_questions_may_be_unanswerable(tmp_path):
    examples = squad.read_squad(_v2_file(tmp_path, [ANSWERABLE, UNANSWERABLE]), version_2=True)
    assert [(e.id, e.is_impossible, e.answers) for e in examples] == [
        ("a", False, [("Paris", 0)]), ("u", True, [])]


def test_an_unanswerable_question_in_v1_data_and_one_with_answers_are_errors(tmp_path):
    with pytest.raises(DataError, match=r"qas\[1\] \(id u\): an unanswerable question "
                                        r"\(is_impossible\) in SQuAD v1.1 data; for SQuAD 2.0 "
                                        "pass version_2_with_negative"):
        squad.read_squad(_v2_file(tmp_path, [ANSWERABLE, UNANSWERABLE]))
    bad = dict(ANSWERABLE, id="b", is_impossible=True)
    with pytest.raises(DataError, match=r"v2.json: data\[0\].paragraphs\[0\].qas\[0\] \(id b\): "
                                        r"marked is_impossible but has 1 answer\(s\)"):
        squad.read_squad(_v2_file(tmp_path, [bad]), version_2=True)


def _two_paragraph_articles(tmp_path, articles=3, questions=4):
    data = []
    for a in range(articles):
        cities = [f"Town{a}x{p}" for p in range(2)]
        paragraphs = []
        for p, city in enumerate(cities):
            context = f"Paragraph {p} of article {a}: the mayor lives in {city}."
            paragraphs.append({"context": context, "qas": [
                {"id": f"a{a}p{p}q{q}", "question": f"Where does mayor {q} live?",
                 "answers": [{"text": city, "answer_start": context.index(city)}]}
                for q in range(questions)]})
        data.append({"title": f"a{a}", "paragraphs": paragraphs})
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return str(path)


def test_unanswerable_copies_pair_a_question_with_a_paragraph_without_its_answer(tmp_path):
    source = squad.WithUnanswerable(squad.SquadFile(_two_paragraph_articles(tmp_path)), 0.5, 7)
    examples = list(source.questions())
    originals = {e.id: e for e in examples if not e.is_impossible}
    copies = [e for e in examples if e.is_impossible]
    assert len(originals) == 24 and 4 <= len(copies) <= 20  # about half, seeded
    for copy in copies:
        original = originals[copy.id[:-len("_unanswerable")]]
        assert copy.question == original.question and copy.answers == []
        assert copy.context != original.context and copy.article == original.article
        assert all(text not in copy.context for text, _ in original.answers)
    # the same copies whatever order the articles are read in (training reads them shuffled)
    again = [e.id for e in source.questions(order=[2, 0, 1]) if e.is_impossible]
    assert sorted(again) == sorted(c.id for c in copies)
    assert source.fingerprint()["unanswerable_fraction"] == 0.5
