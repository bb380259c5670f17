"""Explanations as people read them: one JSON object per text, and an HTML page of shaded words.

What the export's `explain` signature (`zoo.export.explain.ExplainServing`) returns for a batch
becomes, per text (`rows`):

    {"target": "positive", "probability": 0.97, "objective": "log_probability",
     "score": -0.03, "baseline_score": -0.89, "completeness_gap": 0.002,
     "method": "integrated_gradients",
     "words": [{"text": "great", "start": 4, "end": 9, "attribution": 0.51,
                "truncated": false}, ...]}

`score` is what the attributions explain (`objective`: the log-probability of the target
class, the log-odds of a multi-label class, a regression's score), `probability` the target's
probability (null for a regression); the attributions add up to `score - baseline_score`, up to
`completeness_gap`. (`segment`, 0 or 1, in each word of a pair model's explanation;
`baseline_score` and `completeness_gap` are null for occlusion.)

`zoo.serving.Model.explain` returns these dicts and `--mode=explain` writes them as JSON lines
(`zoo.evaluation.explain_files`), with an HTML page (`PAGE_HEAD`, a `text_block` per text,
`page_end`) that needs no script, font or file besides itself: each text with its words shaded
by attribution (red: towards the target, blue: against; the strongest word of a text at full
colour), its target and score.

Only the standard library is imported: `zoo.serving` uses this module.
"""
import html
import math


def _number(value):
    """A float for JSON: None for NaN."""
    value = float(value)
    return None if math.isnan(value) else value


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def rows(outputs, count, pair=False):
    """One dict per text (see the module docstring) from the NumPy outputs of a batch of
    `count` texts."""
    result = []
    for i in range(count):
        words = []
        for j in range(int(outputs["num_words"][i])):
            word = dict(text=_text(outputs["word"][i][j]), start=int(outputs["word_start"][i][j]),
                        end=int(outputs["word_end"][i][j]),
                        attribution=float(outputs["attribution"][i][j]),
                        truncated=bool(outputs["truncated"][i][j]))
            if pair:
                word["segment"] = int(outputs["segment"][i][j])
            words.append(word)
        result.append(dict(target=_text(outputs["target"][i]),
                           probability=_number(outputs["probability"][i]),
                           objective=_text(outputs["objective"][i]),
                           score=float(outputs["score"][i]),
                           baseline_score=_number(outputs["baseline_score"][i]),
                           completeness_gap=_number(outputs["completeness_gap"][i]),
                           method=_text(outputs["method"][i]), words=words))
    return result


def _shade(attribution, strongest):
    """A CSS background for an attribution: red towards the target, blue against, its
    opacity the share of the text's strongest attribution."""
    if not strongest or not attribution:
        return "transparent"
    alpha = min(1.0, abs(attribution) / strongest)
    rgb = "220,40,40" if attribution > 0 else "40,90,220"
    return f"rgba({rgb},{alpha:.2f})"


def _shaded_text(text, words):
    """`text` as HTML with each word of `words` (offsets into it) in a shaded span."""
    strongest = max((abs(w["attribution"]) for w in words), default=0.0)
    parts, at = [], 0
    for word in words:
        parts.append(html.escape(text[at:word["start"]]))
        title = f"{word['attribution']:+.4f}" + (" (cut by max_seq_length)"
                                                 if word["truncated"] else "")
        style = f"background:{_shade(word['attribution'], strongest)}"
        if word["truncated"]:
            style += ";text-decoration:line-through"
        parts.append(f'<span style="{style}" title="{html.escape(title)}">'
                     f'{html.escape(text[word["start"]:word["end"]])}</span>')
        at = word["end"]
    parts.append(html.escape(text[at:]))
    return "".join(parts)


PAGE_HEAD = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; max-width: 60em; margin: 2em auto; line-height: 1.7; }}
.text {{ border-bottom: 1px solid #ddd; padding: 0.6em 0; }}
.meta {{ color: #555; font-size: 0.85em; }}
.segment {{ display: block; }}
span[title] {{ border-radius: 3px; padding: 0 1px; }}
</style></head><body>
<h1>{title}</h1>
<p class="meta">Each word is shaded by its attribution to the score of the target class (its
log-probability; a multi-label class's log-odds; a regression's score): red raised it, blue
lowered it, the strongest word of each text at full colour. A struck-out
word was cut by max_seq_length. Hover over a word for its value.</p>
"""


def text_block(texts, row, name=None):
    """The HTML of one explained input: its texts (one per segment) with shaded words, its
    target, score and method."""
    segments = []
    for segment, text in enumerate(texts):
        words = [w for w in row["words"] if w.get("segment", 0) == segment]
        segments.append(f'<span class="segment">{_shaded_text(text, words)}</span>')
    gap = row["completeness_gap"]
    meta = [f"target <b>{html.escape(row['target'])}</b>"]
    if row["probability"] is not None:
        meta.append(f"probability {row['probability']:.4f}")
    meta += [f"{row['objective'].replace('_', ' ')} {row['score']:.4f}",
             row["method"].replace("_", " ")]
    if gap is not None:
        meta.append(f"completeness gap {gap:+.4f}")
    if name is not None:
        meta.insert(0, html.escape(str(name)))
    return (f'<div class="text">{"".join(segments)}'
            f'<div class="meta">{" · ".join(meta)}</div></div>\n')


def error_block(name, error):
    """The HTML of an input that could not be explained (a bad row)."""
    return (f'<div class="text"><div class="meta">{html.escape(str(name))}: '
            f'{html.escape(error)}</div></div>\n')


def page_end():
    return "</body></html>\n"
