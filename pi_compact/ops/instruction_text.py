"""What a user's sentence instructs, as pure text: its core (``core_text``: leading discourse words such as "btw" or
"remember", a reason after a comma and end punctuation dropped), whether it asks for the work at hand rather than
stating what holds (``is_request``), and its key (``instruction_key``: the set of its stemmed content words, common
words dropped, negations as one token, a few synonyms of coding instructions folded, "touch / modify / edit",
"lives in / goes in / belongs in").

Two sentences state the same instruction when their keys are near-duplicates (``similarity``: a token-set Jaccard
of at least ``MATCH_THRESHOLD``, the same polarity, and one shared word that is not a generic verb or noun), or when
one says what the other says in more words (``covers``).
"""

from __future__ import annotations

import re

# Measured on bench/rules_trees.py (bench/RESULTS.md, "Repeated rules"): from 0.3 to 0.5 precision stays above
# 0.96 (the gates in ``similarity`` keep different instructions apart); above 0.5 paraphrases split into several
# suggestions of the same rule, which costs precision and recall alike. 0.4 was best on both.
MATCH_THRESHOLD = 0.4
COVER_SHARE = 0.6

LEADING = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|so|now|and|also|oh|wait|btw|by the way|note|nb|ps|p\.s\.|heads[- ]up|reminder|"
    r"remember(?: that| to)?|as always|again|as i said(?: before)?|like i said|as usual|one more thing|one rule|"
    r"(?:new |house |project )?rule|fyi|for reference|for the record|before i forget|quick note|important|please|"
    r"pls|just|actually|and again|once more)\b[\s,:;.!-]*)+",
    re.IGNORECASE,
)
# A reason or an aside after the instruction ("…, it holds the live credentials", "… because CI runs it").
_REASON = re.compile(
    r"(?:,|\s[-–—]|\s\()\s*(?:it|that|this|they|those|these|since|because|as|so|which|otherwise|or else|"
    r"the \w+ (?:is|are|has|have|holds?|runs?|breaks?))\b.*$"
    r"|\s+(?:because|since|otherwise|so that|or else)\b.*$",
    re.IGNORECASE,
)
# "X, not Y", "X instead of Y": the contrast is part of the instruction, but not a negation of it.
_CONTRAST = re.compile(r",\s*(?:and\s+)?(?:not|never)\b|\b(?:instead of|rather than|in place of|over)\b", re.IGNORECASE)
# "Never use print, use logging": a negation with the positive alternative after it.
_ALTERNATIVE = re.compile(r"[,;:]\s*(?:but\s+|just\s+|always\s+)?(?:use|prefer|go with|open|do|run|put|ask)\b")
_HANDS_OFF = re.compile(r"\bhands off\b", re.IGNORECASE)
_LEAVE_ALONE = re.compile(r"\bleave\s+(.{1,60}?)\s+alone\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:do not|don't|dont|do n't|never|must not|mustn't|must never|should not|shouldn't|should never|"
    r"shall not|cannot|can't|can not|may not|no longer|avoid|not allowed to|not allowed|forbidden|"
    r"under no circumstances|off[- ]limits|hands off|stay away from|refrain from|no|not|nothing|without|"
    r"nicht|nie|niemals|keine?[nmrs]?|nunca|jamás|sin)\b"
    r"|지\s*(?:마|말)|않|금지|건드리지|ないで|ない|禁止|不要|别|不准|不许|不得|不能|永不",
    re.IGNORECASE,
)
# "X 말고 Y", "X ではなく Y", "而不是", "statt", "en lugar de": a contrast, as "instead of".
_CJK_CONTRAST = re.compile(
    r"말고|대신|ではなく|じゃなく|而不是|不是|\b(?:statt|anstatt|sondern|en lugar de|en vez de)\b", re.I
)
# Scripts written without spaces between words, or with particles and endings glued to them.
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ff]+")
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7a3]")
# Korean particles and verb endings, stripped from the end of a word (longest first) before it is cut in pairs.
_KO_ENDINGS = sorted(
    [
        "에서는",
        "에게는",
        "한테는",
        "으로는",
        "에서",
        "에게",
        "한테",
        "으로",
        "까지",
        "부터",
        "이랑",
        "랑",
        "은",
        "는",
        "이",
        "가",
        "을",
        "를",
        "에",
        "로",
        "도",
        "만",
        "와",
        "과",
        "의",
        "해주세요",
        "해줘",
        "해요",
        "하세요",
        "하지",
        "하기",
        "하고",
        "해서",
        "하면",
        "해",
        "하",
        "받아",
        "받고",
        "맡겨",
        "줘",
        "주세요",
        "마세요",
        "마",
        "말고",
        "야",
        "이야",
        "돼",
        "라",
        "지",
        "기",
        "고",
        "게",
        "요",
        "서",
        "써",
        "돌려",
        "줄래",
    ],
    key=len,
    reverse=True,
)
NOT = "¬"  # the token every negation becomes
MIXED = "±"  # a negation followed by its positive alternative: compatible with either form
_TOKEN = re.compile(r"[^\W_]+|¬")
_SYNONYMS = {
    **dict.fromkeys(
        ("touch", "modify", "edit", "change", "alter", "overwrite", "rewrite", "tamper", "mess", "update"), "edit"
    ),
    **dict.fromkeys(("remove", "delete", "drop", "erase", "rm"), "delete"),
    **dict.fromkeys(("add", "create", "introduce", "new"), "add"),
    **dict.fromkeys(("run", "execute", "invoke", "launch"), "run"),
    **dict.fromkeys(("use", "using", "used", "employ", "utilize", "utilise"), "use"),
    **dict.fromkeys(
        (
            "live",
            "lives",
            "go",
            "goes",
            "belong",
            "belongs",
            "put",
            "place",
            "store",
            "stored",
            "located",
            "reside",
            "resides",
            "sit",
            "sits",
            "placed",
        ),
        "loc",
    ),
    **dict.fromkeys(
        ("dependency", "dependencies", "deps", "dep", "package", "packages", "library", "libraries", "lib", "libs"),
        "dep",
    ),
    **dict.fromkeys(("repo", "repository", "codebase"), "repo"),
    **dict.fromkeys(("db", "database"), "db"),
    **dict.fromkeys(("test", "tests", "testing", "tested", "spec", "specs"), "test"),
    **dict.fromkeys(("secret", "secrets", "credential", "credentials", "creds", "password", "passwords"), "secret"),
    **dict.fromkeys(("doc", "docs", "documentation"), "doc"),
    **dict.fromkeys(("config", "configuration", "settings"), "config"),
    **dict.fromkeys(("py", "python"), "python"),
    **dict.fromkeys(("js", "javascript"), "javascript"),
    **dict.fromkeys(("ts", "typescript"), "typescript"),
}
_STOP = frozenset(
    """a an the this that these those it its it's they them their there here we us our you your i me my to of in on
    at by for from with into onto under over about as and or but if then than so is are was were be been being am do
    does did done have has had having will would shall should can could may might must need needs needed ought
    always ever every everything anything any all each whatever whenever wherever also just only still even please
    kindly make sure remember going forward now on from time times moment mind thing things stuff way ways one ones
    file files folder folders directory directories dir dirs path paths code part parts bit bits kind okay ok
    yes yeah really very much more most less least lot lots like want wanted wants let lets let's what which who how
    when where why whether again once twice thanks thank sorry actually basically stay prefer preferred rather
    favor favour keep directly straight right simply through via btw fyi pls plz lol inside""".split()  # noqa: SIM905
)
# Tokens too common among coding instructions to make two sentences the same instruction on their own.
GENERIC = frozenset(
    [
        NOT,
        "edit",
        "delete",
        "add",
        "run",
        "use",
        "loc",
        "test",
        "doc",
        "config",
        "write",
        "read",
        "work",
        "fix",
        "check",
        "get",
        "set",
        "new",
    ]
)
# A request for the work at hand rather than something that holds: "make sure the tests pass", "bump the version to
# 2.3.1". Kept when a word makes it general ("make sure to run ruff before every commit").
_REQUEST = re.compile(
    r"^(?:make sure|ensure|bump|set|change|raise|lower|increase|decrease|switch|update|make|try|now|then|next|"
    r"first|finally)\b",
    re.IGNORECASE,
)
_GENERAL = re.compile(
    r"\b(?:always|never|every|each|whenever|any ?time|all|from now on|going forward|in this (?:repo|project|"
    r"codebase)|at all times|ever|before (?:you|committing|pushing|merging|every|each|any)|after (?:every|each|any)|"
    r"by default|as a rule|in general|generally)\b",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A light suffix stripper: plural, -ing, -ed, -ly, -ion, a final e (``migrations``, ``migrated`` and
    ``migrate`` all give ``migrat``), so that the forms of one word compare equal. Short words are kept."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl, minimum in (
        ("ies", "y", 5),
        ("sses", "ss", 6),
        ("ss", "ss", 0),
        ("us", "us", 0),
        ("is", "is", 0),
        ("s", "", 4),
    ):
        if word.endswith(suffix) and len(word) >= minimum:
            word = word[: len(word) - len(suffix)] + repl
            break
    for suffix, minimum in (
        ("ingly", 7),
        ("ing", 6),
        ("edly", 6),
        ("ed", 5),
        ("ly", 6),
        ("ations", 8),
        ("ation", 7),
        ("ions", 6),
        ("ion", 6),
        ("ment", 7),
    ):
        if word.endswith(suffix) and len(word) >= minimum:
            word = word[: len(word) - len(suffix)]
            if suffix in ("ation", "ations"):
                word += "at"
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, committed -> commit
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def is_request(sentence: str) -> bool:
    """Whether a sentence the classifier took for an instruction asks for the work at hand ("make sure the tests
    pass", "bump the version to 2.3.1"): it opens with such a verb and no word makes it general."""
    core = core_text(sentence)
    return bool(_REQUEST.match(core)) and not _GENERAL.search(core)


_STEMMED_SYNONYMS = {_stem(word): canonical for word, canonical in _SYNONYMS.items()}
_STEMMED_STOP = frozenset(_stem(word) for word in _STOP)


def core_text(sentence: str) -> str:
    """The instruction itself: leading discourse words, a trailing reason or aside and end punctuation removed."""
    text = " ".join(sentence.split())
    text = LEADING.sub("", text)
    text = _REASON.sub("", text)
    return text.strip(" .!;:,-*>#")


def instruction_key(sentence: str) -> frozenset[str]:
    """What a sentence instructs, as a set of normalised tokens (see the module's docstring)."""
    text = core_text(sentence).lower()
    text = _LEAVE_ALONE.sub(r"never touch \1", text)
    text = _HANDS_OFF.sub("never touch", text)
    text = _CONTRAST.sub(" ", text)
    mixed = bool(_NEGATION.search(text)) and bool(_ALTERNATIVE.search(text))
    text = _CJK_CONTRAST.sub(" ", text)
    text = _NEGATION.sub(f" {NOT} ", text)
    tokens = {MIXED} if mixed else set()
    if _CJK.search(text):
        tokens.update(_cjk_tokens(text))
        text = _CJK_RUNS.sub(" ", text)
    for word in _TOKEN.findall(text.replace("'", "")):
        if word in _STOP:
            continue
        stemmed = _stem(word)
        token = _SYNONYMS.get(word) or _STEMMED_SYNONYMS.get(stemmed) or stemmed
        if token not in _STOP and token not in _STEMMED_STOP:
            tokens.add(token)
    return frozenset(tokens)


_CJK_RUNS = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7a3]+")


# Chinese function characters (particles, "must", "one", "let"): pairs are cut at them, not made across them.
_HAN_FUNCTION = re.compile(r"[的了之都要就在和是把让再也一下请给将被着过得地]")


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else []


def _korean_word(word: str) -> str:
    """A Korean word without the particles and endings glued to it (at most two, at least a syllable kept)."""
    for _ in range(2):
        for ending in _KO_ENDINGS:
            if len(word) > len(ending) and word.endswith(ending):
                word = word[: -len(ending)]
                break
        else:
            break
    return word


def _cjk_tokens(text: str) -> set[str]:
    """Tokens of Korean, Chinese and Japanese text: a Korean word without its particles and endings, cut in
    pairs of syllables; Chinese characters in pairs; a katakana word (a loanword: サブエージェント) whole;
    hiragana (particles, endings) left out."""
    out: set[str] = set()
    for match in _HANGUL_RUN.finditer(text):
        out.update(_pairs(_korean_word(match[0])))
    for match in _HAN_RUN.finditer(text):
        for part in _HAN_FUNCTION.split(match[0]):
            out.update(_pairs(part))
    for match in _KATAKANA_RUN.finditer(text):
        if len(match[0]) > 1:
            out.add(match[0])
    return out


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """How much two keys say the same thing: their Jaccard index, 0 when only one is negated or when all they
    share is generic words."""
    if not a or not b:
        return 0.0
    if (NOT in a) != (NOT in b) and MIXED not in a and MIXED not in b:
        return 0.0
    shared = a & b
    if not shared - GENERIC - {MIXED}:
        return 0.0
    marks = {NOT, MIXED}  # the polarity, already compared: not a word the two share
    return len(shared - marks) / len((a | b) - marks)


def same_instruction(a: str, b: str, threshold: float = MATCH_THRESHOLD) -> bool:
    """Whether two sentences state the same instruction in other words."""
    return similarity(instruction_key(a), instruction_key(b)) >= threshold


def covers(line: frozenset[str], statement: frozenset[str]) -> bool:
    """Whether an instruction-file line says what a statement says in more words: the same polarity, and at least
    ``COVER_SHARE`` of the smaller key's words, two of them not generic, in both."""
    if similarity(line, statement) == 0.0:
        return False
    marks = {NOT, MIXED}
    shared = (line & statement) - marks
    smaller = min(len(line - marks), len(statement - marks))
    return len(shared - GENERIC) >= 2 and len(shared) >= COVER_SHARE * smaller
