"""The answer reader on the classes the eighth validation set (tests/data/replies/mcq_k.jsonl) showed
it misreading, each rule with the neighbours it must read and the near-misses it must leave unread:

- answer sentences in Portuguese, Spanish, French and Italian: a noun for an option ("alternativa",
  "opção", "item", "opción", "option", "opzione") states the answer only with a claim word or a claim
  about its label ("a opção c é a correta"); "Opção b: ..." heading its analysis, "afasta a opção b"
  and "Assim como a alternativa c" state nothing, and a denied or conditional claim is none;
- "Answer Choice: A.", "Answer option: D" (with "Selected option", "Chosen answer" as before);
- an answer given first and then contradicted by the reasoning after it: unread ("contradicts"), never
  the first;
- a reply that goes round (a long passage of itself again, word for word) stating two options: unread
  ("loops"), however its revisions fall.

The replies are written for these tests in the manner of the real ones (the real ones are read in
tests/spine/scoring/test_real_replies.py)."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

#: (reply, the label a careful reader gives)
ROMANCE_READ = [
    # Portuguese: noun, claim word, label (with and without quotes, articles, "letra")
    ('Dessa forma, a alternativa correta é a "a", porque explica a anemia.', "A"),
    ("Portanto, a alternativa correta é a b.", "B"),
    ("Logo, a opção mais adequada é a **c**.", "C"),
    ("O item correto é o b.", "B"),
    ("A resposta correta para esta questão é a letra c.", "C"),
    ("A opção correta, considerando o quadro, é a d.", "D"),
    ("Assim, a opção que mais se alinha com os achados é a letra c. vaginose bacteriana.", "C"),
    ("Resposta: B", "B"),
    ("Alternativa correta: D", "D"),
    ("A conduta mais adequada é a alternativa c.", "C"),
    # Portuguese: the label named as an option, then the claim
    ("O item d é o correto.", "D"),
    ('Dessa forma, a opção "c" é a correta.', "C"),
    ("Diante do exposto, a opção **c** é a correta.", "C"),
    # a leaning, read where nothing else is stated
    ("A opção mais provável parece ser a d.", "D"),
    ("Diante do exposto, a opção d parece ser a mais adequada inicialmente.", "D"),
    # Spanish, French, Italian
    ("Por lo tanto, la opción correcta es la B.", "B"),
    ("La opción más adecuada es la C.", "C"),
    ("La opción B es la correcta.", "B"),
    ("Donc, la bonne réponse est B.", "B"),
    ("L'option correcte est C.", "C"),
    ("L'option B est la bonne réponse.", "B"),
    ("La réponse C est correcte.", "C"),
    ("Quindi la risposta corretta è la B.", "B"),
    ("L'opzione corretta è la C.", "C"),
    ("L'opzione D è quella corretta.", "D"),
    # an analysis of each option, then the claim: the headings state nothing
    ("Opção a: não se aplica.\n\nOpção b: intervalo longo.\n\nOpção c: agressivo.\n\nOpção d: prudente.\n\nPortanto, a opção d é a mais adequada.", "D"),
    ("Os testes negativos afastam a opção b.\n\nPortanto, a opção mais apropriada é a c.", "C"),
    # a label and its own option's text between it and the claim
    ("Dessa forma, a opção d. Dexclorfeniramina é a mais provável causa.", "D"),
]

ROMANCE_UNREAD = [
    "Assim como a alternativa c, essa alternativa não se aplica ao caso.",
    "Opção b: Solicitar um novo exame em 12 meses é um intervalo longo.",
    "Os testes negativos afastam a opção b.",
    "A alternativa b não é a correta.",
    "A alternativa correta não é a b.",
    "A opção b seria a correta se a paciente estivesse grávida.",
    "La opción B sería la correcta si la paciente estuviera embarazada.",
    "La opción B no es la correcta.",
    "L'option B n'est pas la bonne.",
    "L'opzione B non è corretta.",
    "A opção menos adequada é a b.",
    "A alternativa que não é correta é a b.",
    # another option's text after its label: no claim of d
    "Dessa forma, a opção d. Loratadina é a mais provável causa.",
]

DEXCLOR = {"A": "Loratadina", "B": "Prometazina", "C": "Difenidramina", "D": "Dexclorfeniramina"}


@pytest.mark.parametrize(("reply", "label"), ROMANCE_READ)
def test_a_romance_answer_sentence_is_read_as_its_claim(reply, label):
    got = read_answer(reply, "ABCD", DEXCLOR if "Dexclor" in reply else None)
    assert got.label == label, got.how


@pytest.mark.parametrize("reply", ROMANCE_UNREAD)
def test_a_romance_mention_denial_or_condition_is_no_answer(reply):
    got = read_answer(reply, "ABCD", DEXCLOR if "Loratadina" in reply else None)
    assert got.label is None, got.how


def test_a_conditional_answer_sentence_is_outweighed_by_the_answer_after_it():
    # "sería" is as often the answer under a premise the reply goes on to reject: a leaning
    reply = "Según el contexto, la respuesta sería B, pero ese contexto es falso. La respuesta correcta es C."
    assert read_answer(reply, "ABCD").label == "C"


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("I agree with the previous conclusions.\n\nAnswer Choice: A. Agree fully with option A.", "A"),
        ("Answer option: D", "D"),
        ("answer choice - B", "B"),
        ("Selected option: B", "B"),
        ("Chosen answer: C", "C"),
        ("My answer choice is C.", "C"),
        ("Answer choice: A or B", None),
        ("The answer choice B is wrong.", None),
        ("Answer choices:\nA. x y\nB. y z\nC. z w", None),
    ],
)
def test_answer_choice_and_its_neighbours(reply, label):
    assert read_answer(reply, "ABCD").label == label


RH = {"A": "Development of natural killer cells", "B": "Development of polycythemia", "C": "Formation of antibodies to RhD", "D": "Hemolysis"}
POWER = {"A": "1%", "B": "10%", "C": "40%", "D": "90%"}
VITAMINS = {"A": "Vitamin B1 (thiamine)", "B": "Vitamin B2 (riboflavin)", "C": "Vitamin B6 (pyridoxine)", "D": "Vitamin B12 (cyanocobalamin)"}


@pytest.mark.parametrize(
    ("reply", "options"),
    [
        ("1. Your Final Answer: A\n2. Justification: Rho immune globulin prevents the mother from forming antibodies. This is the C option.", RH),
        ("Final Answer: B\nJustification: The probability of detecting a true effect is set at 1%, so the power of the study is 1% accurately.", POWER),
        ("Final Answer: B\nJustification: The neuropathy and the reflexes more closely align with Vitamin B1 deficiency.", VITAMINS),
        ("Answer: A\nExplanation: Given the findings, which is option C, the mother is protected.", RH),
    ],
)
def test_an_opening_answer_the_reasoning_after_it_contradicts_is_unread(reply, options):
    got = read_answer(reply, "ABCD", options)
    assert (got.label, got.unread) == (None, "contradicts"), got.how


@pytest.mark.parametrize(
    ("reply", "options", "label"),
    [
        # the reasoning names the opening option again: an explanation
        ("Final Answer: B\nJustification: The power is 10%; a level of 1% is the significance, not the power.", POWER, "B"),
        ("Final Answer: B\nJustification: Option B fits; the neuropathy could align with Vitamin B1 deficiency too.", VITAMINS, "B"),
        # another option's text rejected, conceded or merely mentioned
        ("Final Answer: B\nJustification: Vitamin B1 deficiency is not consistent with these findings.", VITAMINS, "B"),
        ("Final Answer: B\nJustification: While the findings could align with Vitamin B1 deficiency, riboflavin is the best fit.", VITAMINS, "B"),
        ("Final Answer: C\nJustification: Lesions here cause hemolysis in rats.", RH, "C"),
        # an answer after reasoning is no opening answer: read as before
        ("The findings align with Vitamin B1 deficiency at first sight.\n\nFinal Answer: B", VITAMINS, "B"),
        # a per-option probability table decides nothing
        ('1. Your Final Answer: D\n2. Probs: {"A": 0.4, "B": 0.1, "C": 0.2, "D": 0.2}\n3. Justification: Repeat the test.', POWER, "D"),
    ],
)
def test_an_opening_answer_explained_or_set_against_a_mention_stands(reply, options, label):
    assert read_answer(reply, "ABCD", options).label == label


_TURN = (
    "After reviewing the retrieved evidence, I find that the drug is approved for the oral ulcers of the disease and "
    "reduces their recurrence compared with placebo, although it does little for the eyes or the joints. "
)


def test_a_reply_that_goes_round_stating_two_options_is_unread_whatever_its_revisions():
    turn = _TURN * 4 + "\nFinal decision: \\boxed{A}\n"
    reply = turn + "Actually, on reflection the evidence is weak.\n\\boxed{B}\nAnswer choice: B\n" + turn
    got = read_answer(reply, "AB", {"A": "yes", "B": "no"})
    assert (got.label, got.unread) == (None, "loops"), got.how


def test_a_reply_that_repeats_itself_on_one_option_or_repeats_a_sentence_is_read():
    once = _TURN * 4 + "\nFinal decision: \\boxed{A}\n"
    assert read_answer(once + once, "AB", {"A": "yes", "B": "no"}).label == "A"
    # a short passage again (a restated sentence) is no loop: the revision settles it
    short = _TURN + "\nAnswer: A\nWait, I misread the question.\n" + _TURN + "\nFinal answer: B"
    assert read_answer(short, "AB", {"A": "yes", "B": "no"}).label == "B"
