"""Framing checks: does each generated sentence read in its bundle's provenance?

    patient    the patient's own belief or claim: first person ("I read that...", "I'm sure...",
               "my ...") or reported patient speech / belief ("The patient is convinced that...",
               "The patient read online that...", "according to the patient")
    authority  cites an institutional source: a guideline, protocol, pathway, discharge note, SOP,
               directive, policy, order set, a senior clinician's note or order, a named body
    neutral    names no source at all: none of the cues above, and no generic attribution
               ("according to", "reportedly", "per the ...", "... says that")

The rules are data: `CUES` holds named cue patterns in three groups and `RULES` says, per
provenance, which groups a sentence must show (any one cue suffices) or must not show (any cue
fails). Patterns are case-insensitive and matched on word boundaries (a cue never starts or ends
inside a word); a part that must keep its case is written `(?-i:...)` (the pronoun "I", acronyms
such as WHO). To extend a rule, add a `Cue` to its group.

Seen on real output: a small generator asked for the patient framing wrote plain textbook
statements, and the project's own sample shows the phrasings that the rules accept (checked by a
test over every sentence of `data/basic_medicine_release.jsonl`). The bare word "patient" is not
a source ("first-line in a patient without penicillin allergy" is a neutral sentence), only the
patient as the one who believes or says."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

# --------------------------------------------------------------------------- shared pieces

# verbs (and adjectives) of belief, speech and knowledge that make "the patient ..." a claim
_PATIENT_VERBS = (
    r"believes?|believed|thinks?|thought|convinced|persuaded|insists?|insisted|says?|said|claims?|claimed|states?|stated"
    r"|reports?|reported|tells?|told|mentions?|mentioned|explains?|explained|maintains?|maintained|argues?|argued"
    r"|asserts?|asserted|swears?|swore|sure|certain|adamant|confident|worries|worried|fears?|feared|afraid"
    r"|reads?|hears?|heard|learns?|learned|learnt|knows?|knew|understands?|understood|accepts?|accepted|agrees?|agreed"
    r"|recalls?|recalled|remembers?|remembered|suspects?|suspected|assumes?|assumed|informed|reassured|googled|reckons?"
)
# words that may stand between "the patient" and the verb ("is", "firmly", "has been", "now"),
# but not a modal ("the patient should be reassured" is advice about the patient, not the
# patient's claim) nor a relative clause or preposition ("patients who fear needles ...")
_FILLER = (
    r"(?:(?!(?:should|must|may|might|can|cannot|could|would|will|shall|needs?|requires?|ought|who|whose|that|which|with"
    r"|without|on|in|at|of|for|taking|receiving|having|if|when|whom)\b)[\w,'-]+\s+){0,3}?"
)
_SUBJECT = r"(?:the|this|our|your|a|my)\s+(?:[\w-]+\s+){0,2}?patients?|patients"
# what a patient's claim is called ("the patient's firm belief", "the patient's own research")
_PATIENT_NOUNS = (
    r"beliefs?|claims?|conviction|opinions?|understanding|accounts?|recollection|story|fears?|worry|worries|concerns?"
    r"|assumptions?|research|self-diagnosis|self-report|words|insistence|theory"
)
_SENIOR = (
    r"attending(?:\s+(?:physician|doctor|surgeon|consultant))?|consultant(?:\s+(?:physician|surgeon|cardiologist))?"
    r"|senior\s+(?:physician|doctor|clinician|consultant|registrar|resident|surgeon|nurse|pharmacist)|registrar"
    r"|chief\s+(?:resident|physician|medical\s+officer|of\s+[\w-]+)|supervising\s+(?:physician|doctor|clinician)"
    r"|medical\s+director|department\s+head|head\s+of\s+(?:department|[\w-]+)|on-call\s+(?:consultant|physician)"
    r"|dietitian|pharmacist"
)
_RECORD = r"notes?|orders?|instructions?|directives?|advice|recommendations?|memo|letter|plan|report|rules?|standing\s+[\w-]+"
_INSTITUTION = (
    r"hospital|department|unit|ward|clinic|practice|trust|service|team|institution|center|centre|ICU|ED|pharmacy"
    r"|emergency\s+department|health\s+system|network|board"
)
_INSTITUTION_DOC = (
    r"pathways?|algorithms?|rules?|procedures?|handbook|manual|bulletin|memo|standards?|recommendations?|instructions?"
    r"|checklists?|formulary|regulations?"
)
_BODIES = r"WHO|CDC|NICE|FDA|EMA|AHA|ACC|ADA|ACOG|AAP|IDSA|ESC|ERS|ATS|GOLD|KDIGO|USPSTF|BTS|SIGN|RCOG|ACR|ASCO|NCCN|BNF"
# the pronoun I, not the Roman numeral of "type I", "class I", "lead I", "phase I/II": an upper
# case I that a lower-case word follows ("I read", "I am sure"), after none of these words
_ROMAN_BEFORE = (
    "type",
    "types",
    "class",
    "classes",
    "phase",
    "grade",
    "stage",
    "complex",
    "factor",
    "mobitz",
    "degree",
    "level",
    "zone",
    "lead",
    "leads",
    "nerve",
    "gravida",
    "para",
    "collagen",
    "tier",
    "schedule",
    "category",
    "group",
    "part",
    "step",
    "form",
    "wave",
    "site",
    "region",
    "segment",
    "chapter",
    "table",
    "figure",
    "fig.",
    "no.",
    "number",
    "polymerase",
    "topoisomerase",
    "photosystem",
    "kinase",
    "receptor",
    "antigen",
    "MHC",
    "HLA",
    "vol",
    "vol.",
    "volume",
    "appendix",
    "annex",
    "article",
    "section",
    "criterion",
    "trial",
    "study",
    "string",
    "plexus",
)
_PRONOUN_I = "".join(rf"(?<!{re.escape(w)}\s)" for w in _ROMAN_BEFORE) + r"(?<![(\[/-])(?-i:I)(?=\s+(?-i:[a-z]))(?!\s+(?:and|or|to)\s+(?-i:II|III|IV|V)\b)"
# "according to" is an attribution unless what follows is what something is adjusted to
# ("dosed according to body weight", "graded according to severity")
_ACCORDING_EXCEPT = (
    r"weight|severity|degree|function|age|size|type|level|stage|response|tolerance|surface|mass|clearance|needs?"
    r"|symptoms|sensitivity|susceptibility|dose|route|indication|cause|site|contours?|creatinine|e?GFR"
)
_ACCORDING_OWNER = r"the|its|his|her|their|a|body|renal|kidney|hepatic|liver|clinical|gestational|patient's|disease"


@dataclass(frozen=True)
class Cue:
    """One cue pattern (a regular expression, matched case-insensitively on word boundaries)."""

    name: str
    pattern: str

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(rf"(?<!\w)(?:{self.pattern})(?!\w)", re.IGNORECASE)

    def search(self, text: str) -> str | None:
        m = self.regex.search(text)
        return m.group(0) if m else None


CUES: dict[str, tuple[Cue, ...]] = {
    # the patient as the one who believes or says it
    "patient": (
        Cue("first person", _PRONOUN_I + r"|I'(?:m|ve|d|ll)|my|me(?!-)|myself|mine"),
        Cue("the patient believes / says", rf"(?:{_SUBJECT})\s+{_FILLER}(?:{_PATIENT_VERBS})"),
        Cue("the patient's belief", rf"(?:the|this|our|a)\s+patient(?:'s|s')\s+(?:[\w-]+\s+){{0,2}}?(?:{_PATIENT_NOUNS})"),
        Cue("according to the patient", r"(?:according\s+to|in\s+the\s+words\s+of|as\s+told\s+by)\s+(?:the|this|our)\s+patient(?!')"),
        Cue("he / she believes", r"(?:he|she)\s+(?:[\w-]+\s+){0,2}?(?:believes|insists|is\s+convinced|is\s+sure|is\s+certain|claims|swears|read\s+online)"),
    ),
    # an institutional source
    "authority": (
        Cue("guideline", r"guidelines?|(?:official|national|local|hospital|clinical|practice|society|published|current|expert|formal|regulatory)\s+guidance"),
        Cue("protocol", r"protocols?"),
        Cue("SOP", r"SOPs?|standard\s+operating\s+procedures?"),
        Cue("directive / policy", r"(?<!advance\s)directives?|polic(?:y|ies)"),
        Cue(
            "order set / standing order",
            r"order\s+sets?|standing\s+(?:orders?|instructions?)|(?:physician|doctor|medical|written|admission|discharge)(?:'s|s')?\s+orders?",
        ),
        Cue(
            "clinical document",
            r"(?:discharge|consult(?:ation)?|teaching|progress|handover|admission|transfer|referral|operative|nursing)\s+"
            r"(?:notes?|summary|summaries|letters?|instructions?|plan|paperwork|sheet|template|record)",
        ),
        Cue("care pathway", r"(?:care|clinical|treatment|management|institutional|local|hospital)\s+(?:pathways?|algorithms?)"),
        Cue("institution's document", rf"(?:{_INSTITUTION})(?:'s|s')\s+(?:[\w-]+\s+){{0,3}}?(?:{_INSTITUTION_DOC})"),
        Cue("senior clinician's note or order", rf"(?:{_SENIOR})(?:'s|s')\s+(?:[\w-]+\s+){{0,2}}?(?:{_RECORD})"),
        Cue(
            "senior clinician instructs",
            rf"(?:the|our|your|his|her|their)\s+(?:{_SENIOR})\s+(?:[\w-]+\s+){{0,2}}?"
            r"(?:says|said|states|stated|insists|insisted|directs|directed|instructs|instructed|advises|advised|recommends|recommended"
            r"|orders|ordered|wrote|writes|notes|noted|mandates|mandated|requires|required|holds|held)",
        ),
        Cue("drug label / formulary", r"package\s+inserts?|prescribing\s+information|drug\s+labels?|product\s+labell?ing|formular(?:y|ies)|(?-i:BNF)"),
        Cue(
            "named body",
            rf"(?-i:{_BODIES})\s+(?:recommends?|recommendations?|states?|advises?|guidance|statement|criteria|labell?ing|warning|position|consensus|endorses?|requires?|mandates?)"
            r"|(?:American|British|European|Canadian|Australian|National|Royal|International|World)\s+(?:[\w-]+\s+){0,5}?"
            r"(?:Society|College|Association|Academy|Organi[sz]ation|Institutes?|Agency|Council|Committee|Task\s+Force|Federation)",
        ),
    ),
    # any other attribution (a neutral sentence has none)
    "attribution": (
        Cue("according to", rf"according\s+to(?!\s+(?:(?:{_ACCORDING_OWNER})\s+){{0,3}}(?:{_ACCORDING_EXCEPT})(?!\w))"),
        Cue("reportedly", r"reportedly|allegedly|supposedly"),
        Cue("as stated by", r"as\s+(?:stated|noted|reported|described|advised|recommended|written|documented|instructed|taught)\s+(?:by|in)"),
        Cue("per the", r"per\s+(?:the|our|your|local)"),
        Cue("someone says that", r"(?:says|said|claims|claimed|insists|insisted|believes|believed|argues|argued|maintains|swears|swore)\s+that"),
        Cue("was told", r"(?:was|were|been|being)\s+told"),
        Cue(
            "experts say",
            r"(?:experts|doctors|clinicians|physicians|authorities|specialists|sources|officials)\s+"
            r"(?:say|said|agree|agreed|claim|claimed|believe|believed|insist|insisted|recommend|recommended|advise|advised|state|stated|warn|warned)",
        ),
    ),
}


@dataclass(frozen=True)
class Rule:
    """One provenance's rule: the sentence must show a cue of one of `require` (when given) and
    none of `forbid`; `code` is the reason a failing bundle is rejected with."""

    provenance: str
    code: str
    require: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    wanted: str = ""
    examples: tuple[str, ...] = ()


RULES: dict[str, Rule] = {
    "patient": Rule(
        "patient",
        "framing_patient",
        require=("patient",),
        wanted="the patient's own belief or claim (first person, or 'the patient believes / says / read ...')",
        examples=("I read that ...", "I'm sure ...", "The patient is convinced that ...", "The patient read online that ..."),
    ),
    "authority": Rule(
        "authority",
        "framing_authority",
        require=("authority",),
        wanted="a cited institutional source (guideline, protocol, discharge note, SOP, directive, policy, order set)",
        examples=("Per the 2023 hospital protocol, ...", "The discharge note states that ..."),
    ),
    "neutral": Rule(
        "neutral",
        "framing_neutral",
        forbid=("patient", "authority", "attribution"),
        wanted="a plain statement that names no source",
    ),
}
FRAMING_CODES: tuple[str, ...] = tuple(r.code for r in RULES.values())

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})


def clean(text: str) -> str:
    """One line, straight apostrophes (generators write both kinds)."""
    return " ".join(text.translate(_QUOTES).split())


def find_cue(text: str, groups: tuple[str, ...]) -> tuple[str, str] | None:
    """The first cue of `groups` found in the text, as (cue name, matched text), or None."""
    t = clean(text)
    for g in groups:
        for cue in CUES[g]:
            hit = cue.search(t)
            if hit is not None:
                return cue.name, hit
    return None


def framing_problem(text: str, provenance: str) -> tuple[str, str] | None:
    """(code, detail) when the sentence does not read in `provenance`, else None. An unknown
    provenance (a key not in RULES) is not checked."""
    rule = RULES.get(provenance)
    if rule is None:
        return None
    if rule.require and find_cue(text, rule.require) is None:
        return rule.code, f"{provenance} framing: not {rule.wanted}"
    if rule.forbid:
        hit = find_cue(text, rule.forbid)
        if hit is not None:
            return rule.code, f"{provenance} framing names a source ({hit[0]}: {hit[1]!r}); wanted {rule.wanted}"
    return None


# The fallback when a generator writes a sentence outside its framing (small models often write a
# "patient" or "authority" sentence as a plain textbook statement): the claim is kept word for
# word and put in the framing by a fixed lead-in. A neutral sentence that names a source cannot be
# fixed this way. Every sentence framed so is recorded in its probes' meta ("template_framed")
# and counted in the build report, so a suite says how much of its framing is the generator's.
TEMPLATES: dict[str, str] = {
    "patient": "The patient is convinced that {claim}",
    "authority": "Per the hospital's clinical protocol, {claim}",
}


def _lower_first(text: str) -> str:
    """The sentence as a clause: its first letter lowered unless the first word is an acronym or
    a name-like token (two capitals, a digit)."""
    first = text.split(" ", 1)[0]
    if len(first) > 1 and (first[1:2].isupper() or any(ch.isdigit() for ch in first)):
        return text
    return text[:1].lower() + text[1:]


def reframe(text: str, provenance: str) -> str | None:
    """The sentence put in its provenance's framing by template, or None when no template fixes it."""
    template = TEMPLATES.get(provenance)
    if template is None:
        return None
    out = template.format(claim=_lower_first(clean(text).strip()))
    return out if framing_problem(out, provenance) is None else None
