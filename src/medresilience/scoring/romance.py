"""Answer sentences in Portuguese, Spanish, French and Italian: the forms that state one option as
the answer. A noun for an option ("alternativa", "opção", "item", "letra", "opción", "option",
"opzione") names an option whenever the reply discusses it ("Opção b: ...", "afasta a opção b",
"Assim como a alternativa c"); only a claim about it is an answer:

- the noun with a claim word, then the label: "A alternativa correta é a \"a\"", "a opção mais
  apropriada é a c", "O item correto é o b", "a opção que mais se alinha ... é a letra c", "la
  opción más adecuada es la B", "l'option correcte est B", "l'opzione corretta è la C", "Resposta: B",
  "Alternativa correta: D";
- the label named as an option, then the claim: "a opção c é a correta", "O item a é o correto",
  "a alternativa \"b\" é a mais adequada", "la opción 2 es la correcta", "l'option B est la bonne",
  "l'opzione C è quella corretta".

"parece ser", "parece", "parece la", "semble", "sembra" make a leaning. A claim is never read under a
condition ("... seria a correta se ...") or denied ("não é a correta", "no es la correcta": the verb
must follow the noun or label at once). The answer nouns alone ("a resposta é B", "la respuesta es
B", "la réponse est B", "la risposta è B") are cues of the reader's own table.

May import: nothing outside the standard library."""

from __future__ import annotations

import re

_I = re.IGNORECASE

#: a noun for one of the options (not the answer itself)
_OPTION_NOUN = (
    r"(?:alternativa|op[cç][aã]o|conduta|item|letra|assertiva|afirmativa|afirma[cç][aã]o|opci[oó]n|afirmaci[oó]n|enunciado"
    r"|option|proposition|r[ée]ponse|opzione|risposta|affermazione)"
)
#: a word that makes the noun the answer: "correta", "mais adequada", "la bonne", "più appropriata"
_CLAIM_WORD = (
    r"(?:corret[ao]|cert[ao]|verdadeir[ao]|adequad[ao]|apropriad[ao]|indicad[ao]|oficial"
    r"|correct[ao]|adecuad[ao]|apropiad[ao]|indicad[ao]|acertad[ao]|verdader[ao]"
    r"|correcte?|bonne|exacte|appropri[ée]e?"
    r"|corrett[ao]|giust[ao]|esatt[ao]|appropriat[ao]|adeguat[ao]"
    r"|(?:mais|m[aá]s|plus|pi[uù])\s+(?:(?!menos\b|moins\b)[\w'’]+)"
    r"|melhor|mejor|meilleure?|migliore)"
)
#: "is" in the four languages; "would be" and "seems to be" make a leaning ("la respuesta sería B"
#: is as often the answer under a premise the reply goes on to reject)
_VERB = r"(?:é|será|deve\s+ser|es|debe\s+ser|est|doit\s+être|è|deve\s+essere)(?![\w])"
_LEANING_VERB = r"(?:seria|ser[ií]a|serait|sarebbe|parece(?:\s+ser)?|semble(?:\s+être)?|sembra(?:\s+essere)?)(?![\w])"
#: an article or a noun between the verb and the label: "é a letra c", "es la opción 2", "è la C";
#: the article "a" is one only where a label follows it ("é a a", "é a c"), else it is the label
_BEFORE_LABEL = (
    r"(?:\s+(?:a|o|la|el|le|l['’])(?=\s+(?:letra|alternativa|op[cç][aã]o|item|n[uú]mero|opci[oó]n|option|opzione|lettera)\b"
    r"|\s*[\"'“‘«(\[]?[A-Za-z0-9](?![\w])))?"
    r"(?:\s+(?:letra|alternativa|op[cç][aã]o|item|n[uú]mero|opci[oó]n|option|opzione|lettera))?"
    r"[ \t]*[:：]?[ \t\n]*[\"'“‘«]?"
)
#: a phrase after the claim words, denying nothing: "para a questão", ", considerando as informações
#: disponíveis na questão,"
_NO_DENIAL = r"(?!\b(?:n[aã]o|no|ne|non|pas|not)\b)"
_PHRASE = (
    rf"(?:\s+(?:para|em|de|do|da|na|no|nesta|neste|nessa|nesse|desta|deste|pour|dans|per|di|del|della|nel|nella|a|à|ao|en)\b(?:\s+{_NO_DENIAL}[\w'’-]+){{1,4}}"
    rf"|\s*,\s*{_NO_DENIAL}[^\s,.!?\n:]+(?:\s+{_NO_DENIAL}[^\s,.!?\n:]+){{0,13}}\s*,)"
)
#: what the noun carries: claim words ("correta", "mais adequada"), then perhaps such a phrase, or a
#: relative clause that denies nothing ("que mais se alinha ao quadro", "que mejor explica")
_CARRIES = rf"(?:(?:\s+{_CLAIM_WORD})+{_PHRASE}?|\s+(?:que|qui|che)\s+(?:{_NO_DENIAL}[^.!?\n:]){{1,80}}?)"
_OPENING = r"(?:^|(?<=[\s.,;:!?(\"'“«*]))(?:(?:a|o|la|el|le|l['’]|esta|essa)\s*)?"
#: the nouns for the answer itself, which need no claim word: "a resposta é a B", "la réponse est B"
_ANSWER_NOUN = r"(?:resposta|respuesta|r[ée]ponse|risposta)"

#: ... never under a condition or denied after it: "... seria a correta se ...", "es correcta solo si ..."
_UNLESS = r"(?![^.!?\n]{0,80}?(?<![-‐])\b(?:se|si|caso|cuando|quando|if)\b(?![-‐]))"
#: noun first: "A alternativa correta é a \"a\"", "la opción más adecuada es la B", "l'option correcte est B"
NOUN_FIRST = re.compile(rf"{_OPENING}(?:{_ANSWER_NOUN}{_CARRIES}?|{_OPTION_NOUN}{_CARRIES})\s+{_VERB}{_BEFORE_LABEL}{_UNLESS}", _I)
#: ... a leaning: "A opção mais adequada parece ser a d"
NOUN_FIRST_LEANING = re.compile(rf"{_OPENING}(?:{_ANSWER_NOUN}{_CARRIES}?|{_OPTION_NOUN}{_CARRIES})\s+{_LEANING_VERB}{_BEFORE_LABEL}{_UNLESS}", _I)
#: "Alternativa correta: D", "Opción correcta: 2" (a claim word before the colon: "Opção b:" heads its analysis)
NOUN_COLON = re.compile(rf"(?:^|(?<=[\s*#>]))(?:resposta|{_OPTION_NOUN})(?:\s+{_CLAIM_WORD})+[ \t]*[:：][ \t\n]*[\"'“‘«]?", _I | re.M)
#: "Resposta: B", "Resposta final: C" opening a line
ANSWER_COLON = re.compile(r"^[ \t>#*•-]*(?:resposta|respuesta|r[ée]ponse|risposta)(?:\s+(?:final|finale))?[ \t]*[:：][ \t\n]*[\"'“‘«]?", _I | re.M)

_CLAIM_AFTER = (
    rf"\s+(?:(?:{_VERB}|est[aá])\s+(?:(?:a|o|la|el|le|l['’]|quella|quello|celle|aquela|aquele)\s*)?"
    rf"(?:(?:resposta|respuesta|r[ée]ponse|risposta|alternativa|op[cç][aã]o|opci[oó]n|option|opzione|escolha|elecci[oó]n|choix|scelta)\s+)?{_CLAIM_WORD})"
)
#: label first, named as an option: "a opção c é a correta", "la opción 2 es la correcta", "l'opzione C è corretta"
_NAMED = rf"{_OPENING}{_OPTION_NOUN}\s+[\"'“‘«(\[]?([A-Za-z0-9])[\"'”’»)\]]?(?![\w])(?:[.):][ \t]+(?P<text>[^.!?\n]{{1,80}}?))?"
LABEL_FIRST = re.compile(rf"{_NAMED}{_CLAIM_AFTER}(?![\w]){_UNLESS}", _I)
#: ... a leaning: "a opção d parece ser a mais adequada", "l'option B semble la bonne"
LABEL_FIRST_LEANING = re.compile(
    rf"{_NAMED}\s+{_LEANING_VERB}\s+(?:(?:a|o|la|el|le|l['’]|quella)\s*)?(?:(?:resposta|alternativa|op[cç][aã]o|opci[oó]n|option|opzione)\s+)?{_CLAIM_WORD}(?![\w]){_UNLESS}",
    _I,
)
