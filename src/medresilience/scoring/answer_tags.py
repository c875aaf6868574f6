"""Where a reply's own turn ends, and the answer it puts in an XML-like answer tag.

A chat-template token that ends a turn or opens a new one (`<|im_end|>`, `<|eot_id|>`,
`<end_of_turn>`, `<|im_start|>`, `</s>` ...) ends the reply's own text: what a model writes after
it (a new system turn, another question and its answer, the answer line repeated in a loop) is not
its reply to this item. `own_turn` cuts there (a token with nothing but blank text before it, as
`<|im_start|>assistant` opening the reply, is skipped).

An answer tag is a tag pair whose name says it holds the answer (`<answer>B</answer>`,
`<prediction>b</prediction>`, `<final>C</final>`, `<svar>D</svar>`), or such a tag left open at the
reply's very end (a stop sequence took its closing tag). `last_answer_tag` gives the last one in the
reply, with its value; whether the value names one option is the reader's to decide (letters.py).

May import: nothing outside the standard library."""

from __future__ import annotations

import re

_I = re.IGNORECASE

#: a token of a chat template that ends a turn or opens one: `<|im_end|>`, `<|eot_id|>`,
#: `<|endoftext|>`, `<|end|>`, `<|role_end|>`, `<|im_start|>`, `<|start_header_id|>`, the phi-style
#: role tokens (`<|user|>`, `<|assistant|>`, `<|system|>`), gemma's `<end_of_turn>` and
#: `<start_of_turn>`, DeepSeek's `<｜end▁of▁sentence｜>` (read after NFKC, its bars as "|"), Llama-2's
#: `[INST]` opening a user turn, and the end-of-sequence tokens `</s>`, `<eos>`
TURN_TOKEN = re.compile(
    r"<\|(?:[a-z_▁]*(?:end|eot|eos|start|begin)[a-z_▁]*|user|assistant|system|human|bot)\|>|<(?:end_of_turn|start_of_turn|eos|eot_id)>|</s>|\[INST\]",
    _I,
)


#: "<s>B</s>": an HTML strike-through, not the end of a sequence (a sequence opens "<s> The ...")
_STRUCK = re.compile(r"<s>(?!\s)[^<>\n]{1,60}\Z", _I)


#: the channels of a harmony-format reply (gpt-oss): reasoning in "analysis", the reply in "final"
_FINAL_CHANNEL = re.compile(r"<\|channel\|>[ \t]*final[ \t]*(?:<\|[a-z_]+\|>[^<\n]*)*?<\|message\|>", _I)
_ANALYSIS_CHANNEL = re.compile(r"<\|channel\|>[ \t]*analysis[ \t]*<\|message\|>", _I)


def own_turn(text: str) -> str:
    """The reply up to the first turn token that has some of the reply's text before it. A
    harmony-format reply is its final channel; one with only an analysis channel is reasoning never
    closed (given back opening with <think>, which the reader reads as cut off while thinking)."""
    finals = list(_FINAL_CHANNEL.finditer(text))
    if finals:
        text = text[finals[-1].end() :]
    elif _ANALYSIS_CHANNEL.search(text):
        return "<think>" + _ANALYSIS_CHANNEL.sub(" ", text)
    for m in TURN_TOKEN.finditer(text):
        if m.group(0).lower() == "</s>" and _STRUCK.search(text, 0, m.start()):
            continue
        if TURN_TOKEN.sub("", text[: m.start()]).strip():
            return text[: m.start()]
    return text


#: the names of tags that hold the answer (the same words as the answer keys of a JSON reply)
TAG_NAMES = (
    r"answer|final[_ ]?answer|answer[_ ](?:letter|choice|option|label)|choice|final[_ ]?choice|selected(?:[_ ](?:answer|option|choice))?"
    r"|prediction|predicted(?:[_ ](?:answer|option|label))?|pred|final|result|output|correct[_ ](?:answer|option)"
    r"|respuesta|resposta|r[ée]ponse|risposta|antwort|antwoord|svar|vastaus|odpowied[źz]|答案|回答|正解|정답"
)
#: `<answer>B</answer>`, `< Prediction >c</ Prediction >`, or `<answer>B` ending the reply; the value
#: is short and on one line, alone on its lines or not (a tag around a whole reasoning is no answer tag)
ANSWER_TAG = re.compile(rf"<[ \t]*({TAG_NAMES})[ \t]*>\s*([^<>\n]{{0,120}}?)\s*(?:<[ \t]*/[ \t]*\1[ \t]*>|\Z)", _I)


def last_answer_tag(text: str) -> tuple[int, int, str] | None:
    """The last answer tag of the reply: (start, end, its value stripped)."""
    last = None
    for last in ANSWER_TAG.finditer(text):  # noqa: B007 - the last match is the one wanted
        pass
    return None if last is None else (last.start(), last.end(), last.group(2).strip())
