"""Which sentences of a user's message state a standing instruction, as people write them: ``instructions(text)``.

``picompact rules`` reads every user message of a project's sessions; what it suggests for AGENTS.md must be what the
user set for the project, not the work of the moment, however the user wrote it:

- the user's own words only (``own_sentences``): code blocks, quoted lines (``>``), tables, log and stack lines,
  and everything after a heading or after a line that introduces a paste ("from the README:", "here's the doc:",
  "Summary of changes:") are left out, so documentation's "must" and "never" are not taken for the user's;
- misspellings and chat shorthand of the cue words read as the words (``alwyas``, ``nver``, ``b4``, ``u``,
  ``dnt``, ``pls``: ``normalise``);
- English: the checkpoint's cues (``checkpoint.verbatim.standing.classify``: never / always / don't / must / I
  prefer / a setting with its value …, less the requests for the work at hand, ``instruction_text.is_request``),
  and what they miss: a terse prohibition ("no deprecation alias!", "no force pushes"), "stop adding …", an
  imperative made general by when it applies ("run make check before committing", "ask before deleting
  anything", "after every change", "everywhere"), a convention ("use pnpm not npm", "tabs not spaces", "prefer
  composition over inheritance", "keep commits small", "comments in English", "all new code needs type hints",
  "python 3.9 compat"), the harness the agent runs in ("you're in pi, not claude code"), and a review by a
  subagent ("have a subagent review your diff first");
- Korean, Japanese, Chinese, German, Spanish: the words for always / never / don't / before … / first / must /
  instead of, the prohibitive endings (``-지 마``, ``-ないで``, ``不要``, ``keine``, ``no uses``), the harness
  and a subagent's review.

Left out whatever the language: questions, thanks, a sentence bound to the moment ("don't commit yet", ``아직``,
``今回``, ``这次``, ``noch nicht``, ``todavía``), and English statements of what code does ("it never returns").
Deterministic; no model. Measured on the judged corpus of ``tests/ops/rules_corpus.py`` (bench/RESULTS.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from pi_compact.checkpoint.verbatim.standing import classify, split_sentences
from pi_compact.ops.instruction_text import LEADING, is_request

KINDS = ("rule", "constraint", "preference", "value")

# ---------------------------------------------------------------------------------------------------------------
# The user's own words

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_QUOTED = re.compile(r"^\s*>")
_LOG_LINE = re.compile(
    r"^\s*(?:at\s+\S+\s*\(|at\s+[\w.<>$]+\s+\(?\S+:\d+|File \"|Traceback|[\w.]*(?:Error|Exception)\b:|npm (?:ERR|WARN)|"
    r"error(?:\[\w+\])?:|warning:|E\s{2,}|\$ |\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d\d:\d\d)"
)
# A line that announces text the user did not write: "from the README:", "here's the doc:", "output:".
_INTRODUCES = re.compile(
    r"\b(?:doc|docs|documentation|readme|spec|specification|manual|guide|output|log|logs|error|errors|says|said|"
    r"summary|changes|changelog|result|results|trace|traceback|stack|here's|here is|here are|below|following|"
    r"pasted|paste|quote|excerpt|from the|according to|reads|wrote)\b[^:\n]*:\s*$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"(?<=[。！？])\s*|(?<=[.;!?])\s+|\n+")


def own_sentences(text: str) -> list[str]:
    """The sentences of a user message that are the user's own words (see the module's docstring)."""
    kept: list[str] = []
    for line in _FENCE.sub("\n", text).split("\n"):
        stripped = line.strip()
        if _HEADING.match(line) or _TABLE.match(line):
            break
        if _QUOTED.match(line) or _LOG_LINE.match(line):
            continue
        if _INTRODUCES.search(stripped) and kept is not None:
            head = stripped[: stripped.rfind(":")]
            kept.append(head)
            break
        kept.append(line)
    out: list[str] = []
    for piece in _SPLIT.split("\n".join(kept)):
        out.extend(split_sentences(piece))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Spelling

_SHORTHAND = {
    "u": "you",
    "ur": "your",
    "b4": "before",
    "pls": "please",
    "plz": "please",
    "plse": "please",
    "pleae": "please",
    "pleas": "please",
    "dnt": "don't",
    "dont": "don't",
    "dotn": "don't",
    "donot": "do not",
    "nvr": "never",
    "alwys": "always",
    "alwats": "always",
    "thx": "thanks",
    "ty": "thanks",
    "commiting": "committing",
    "comitting": "committing",
    "comiting": "committing",
    "befor": "before",
    "bfore": "before",
}
_FUZZY_TARGETS = ("always", "never", "before", "committing", "please", "remember")
_REAL_WORDS = frozenset(
    """ever fever lever sever newer nerve seven elver beore bore fore lease pleat plead pleasure remembers
    remembered committee admitting omitting emitting""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[A-Za-z0-9']+")


def _near(word: str, target: str) -> bool:
    """One edit apart (a letter added, dropped, changed, or two swapped)."""
    if abs(len(word) - len(target)) > 1 or word == target:
        return False
    if len(word) == len(target):
        diff = [i for i in range(len(word)) if word[i] != target[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and word[diff[0]] == target[diff[1]]
            and word[diff[1]] == target[diff[0]]
        )
    short, long_ = (word, target) if len(word) < len(target) else (target, word)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


@functools.lru_cache(maxsize=8192)
def _spelt(lower: str) -> str | None:
    """The cue word a lower-case word is a misspelling or shorthand of, if any."""
    fixed = _SHORTHAND.get(lower)
    if fixed is None and 4 <= len(lower) <= 11 and lower not in _REAL_WORDS:
        fixed = next((t for t in _FUZZY_TARGETS if _near(lower, t)), None)
    return fixed


def _fix(match: re.Match[str]) -> str:
    word = match[0]
    fixed = _spelt(word.lower())
    if fixed is None:
        return word
    return fixed.upper() if word.isupper() and len(word) > 1 else fixed


def normalise(sentence: str) -> str:
    """The sentence with misspelt cue words and chat shorthand written out ("alwyas run it b4 u push" -> "always
    run it before you push")."""
    return _WORD.sub(_fix, sentence)


# ---------------------------------------------------------------------------------------------------------------
# Cues

_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")

_QUESTION = re.compile(
    r"[?？]\s*\W*$|^\s*¿|(?:까|나요|니|냐|래|줄래|을까|ㄹ까|는지)\s*\W*$|(?:ですか|ますか|でしょうか|の)\s*[。]?$|"
    r"(?:吗|呢|么)\s*[。]?$|^\s*(?:为什么|怎么|什么)|能不能|是不是|要不要|可不可以|会不会|有没有|行不行|对不对|"
    r"^\s*(?:why|what|how|where|when|who|which|can you|could you|"
    r"would you|will you|should i|should we|do you|did you|does|is it|is there|are there|warum|wieso|wie|was|"
    r"kannst du|könntest du|por qué|qué|cómo|puedes)\b",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"^\W*(?:thanks|thank you|great|perfect|nice|cool|looks good|lgtm|awesome|danke|gracias|perfecto|고마워|"
    r"감사|좋아|ありがとう|完璧|谢谢|很好)\b",
    re.IGNORECASE,
)
# Bound to the moment: "don't commit yet", "this time", "for now".
_MOMENT = re.compile(
    r"\b(?:yet|this time|for now|right now|at the moment|today|for this (?:one|task|pr|change)|noch nicht|"
    r"diesmal|vorerst|todavía|por ahora|esta vez)\b"
    r"|아직|이번에는|이번만|지금은|일단|今回|とりあえず|まだ|今は|这次|暂时|先不",
    re.IGNORECASE,
)
# What code or the world does, not what the agent should: "it never returns", "the parser never allocates".
_DESCRIBES = re.compile(
    r"^\W*(?:it|this|that|they|which|there|he|she)\s+(?:never|always|doesn't|does not|don't|do not|won't|can't|"
    r"isn't|aren't)\b"
    r"|^\W*(?:i|we)\s+(?:always|never)\s+(?:\w+ed|got|had|was|were|did|forget|forgot|wonder|thought|knew|saw|see|"
    r"find|found|get|seem)\b"
    r"|\bnever ?mind\b|\b(?:always|never)\s+(?:the|a|an|same|again|been|had|was|is|happens?|works?|fails?)\b"
    r"|\b(?:immer noch|noch immer|sigue|todavía)\b",
    re.IGNORECASE,
)
# A line of a log or an error message, whatever its language.
_ERROR_TEXT = re.compile(r"^\W*(?:error|warning|fehler|エラー|警告|错误|警告|오류|에러|경고)\s*[:：]", re.IGNORECASE)
_CJK_THANKS = re.compile(r"ありがとう|谢谢|感谢|감사합니다|고마워|고맙")

_TERSE_NO = re.compile(
    r"^\W*(?:no|zero)\s+(?:more\s+)?(?!(?:problem|problems|worries|idea|luck|way|thanks|need|change|changes|error|"
    r"errors|output|response|results?|difference|clue|it|that|that's|this|i|you|we|they|he|she|the|not|one|doubt|"
    r"wonder|matter|longer|worry|rush|funciona|anda|sirve|va|sé|es|está|hay)\b)(?![\w-]+\s+(?:were|was|is|are|has|"
    r"have|had|did|does|found|passed|failed|ran|left|showed|came|appeared)\b)[\w`'\".-]",
    re.IGNORECASE,
)
_STOP_DOING = re.compile(r"^\W*(?:stop|quit|no more)\s+\w+ing\b", re.IGNORECASE)
_EN_GENERAL = re.compile(
    r"\b(?:before (?:you |we |i )?(?:commit|push|merg|open|finish|ship|releas|submit|tag|deploy|"
    r"delet|remov|chang|edit|writ|add|run|install)\w*|before (?:every|each|any|a|the next)\b|"
    r"after (?:every|each|any|you (?:change|edit|touch|finish))\b|every time|each time|whenever|"
    r"by default|from now on|going forward|in this (?:repo|repository|project|codebase)|at all times|"
    r"always|never|first\b(?=.*\b(?:review|plan|test|tests|ask|read)\b)|"
    r"(?:review|plan|test|tests|ask)\b.*\bfirst\b)",
    re.IGNORECASE,
)
_EN_CONVENTION = re.compile(
    r"^\W*(?:use|prefer|stick (?:to|with)|go with)\s+(?!(?:the|this|that|it|a|an|my|your|these|those)\b)"
    r"[^,]{1,60}?(?:,?\s*(?:not|instead of|rather than|over)\s+\S+|$)"
    r"|^\W*(?:use|prefer)\s+[^,]{1,60}?,?\s*(?:not|instead of|rather than|over)\s+\S+"
    r"|^\W*[\w`.-]+(?:\s+[\w`.-]+)?,?\s+not\s+[\w`.-]+(?:\s+[\w`.-]+)?\W*$"
    r"|^\W*keep\s+(?:the\s+|all\s+|our\s+|your\s+)?[\w -]{1,30}?\s+(?:small|short|tiny|simple|minimal|focused|"
    r"atomic|lean|sorted|consistent|readable|flat|pure|private|typed)\b"
    r"|^\W*(?:code\s+)?(?:comments?|commit messages?|messages|docstrings?|replies|answers|responses|names|"
    r"identifiers|logs|variable names|output)\s+(?:\w+\s+)?(?:in|as)\s+\w+"
    r"|^\W*(?:all|every|any|each)\s+(?:new\s+)?[\w -]{1,30}\s+(?:needs?|requires?|gets?|has to|have to|must|"
    r"should)\b"
    r"|\bcompat(?:ible|ibility)?\b|\b\w+ only\W*$|^\W*only\s+\w+",
    re.IGNORECASE,
)
# Where things go: "test files belong in tests/extractor/, nowhere else".
_PLACE = re.compile(
    r"\b(?:belongs?|lives?|go|goes|sits?|stays?|are kept|is kept) (?:in|under|into|inside)\s+`?[\w.~-]*/|"
    r"\bnowhere else\b",
    re.IGNORECASE,
)
# Scope, not time: "type hints everywhere" is a convention, "rename fetch_all everywhere" the work at hand.
_SCOPE = re.compile(r"\beverywhere\b|\b(?:in|for) (?:all|every|each|any)\b", re.IGNORECASE)
_TASK = re.compile(
    r"^\W*(?:rename|move|fix|refactor|replace|update|delete|remove|revert|implement|create|add|write|change|convert|"
    r"migrate|port|bump|upgrade|rewrite|clean|format|reformat|translate|document|test|check|look|find|search|grep|"
    r"apply|run|make|set|switch|sort|split|merge|inline|extract|wrap)\b",
    re.IGNORECASE,
)
_HARNESS = re.compile(
    r"\bharness\b|\b(?:you(?:'re| are)|we(?:'re| are)|this is|it's|running|you run|you're running)\b[^.]{0,30}?"
    r"\b(?:pi|claude code|codex|cursor|opencode|aider|gemini cli|copilot)\b",
    re.IGNORECASE,
)
_SUBAGENT = re.compile(
    r"\bsub-?agents?\b.{0,60}\b(?:review|check|verify|audit|look over)|\b(?:review|check)\w*\b.{0,40}\bsub-?agents?\b",
    re.IGNORECASE,
)

# Korean: always / never / must / before / after / from now on (not "first": "look at this first"); a
# prohibitive ending; the harness; a subagent's review.
_KO_GENERAL = re.compile(r"항상|늘|언제나|절대|반드시|꼭|무조건|매번|앞으로|전에|전엔|후에는|후엔|다음부터|금지")
_KO_PROHIBIT = re.compile(r"지\s*(?:마|말아|말고|말 것|마세요|마라|않도록)|말고|건드리지|금지|안\s*돼")
_KO_SPECIAL = re.compile(r"하네스|클로드\s*코드|서브\s*에이전트.*(?:리뷰|검토)|(?:리뷰|검토).*서브\s*에이전트")
# Japanese: 必ず / 常に / never / before; ないで / ないこと; "… こと" as a rule.
_JA_GENERAL = re.compile(r"必ず|常に|いつも|絶対|毎回|今後|前に|前は|後は|禁止")
_JA_PROHIBIT = re.compile(r"ないで|ないこと|ないように|てはいけない|ではなく|じゃなく|こと\s*[。！!]?\s*$")
_JA_SPECIAL = re.compile(r"ハーネス|サブエージェント.*レビュー|レビュー.*サブエージェント")
# Chinese: always / every time / must / never / don't / before / first …
_ZH_GENERAL = re.compile(r"总是|始终|一直|永远|每次|一律|务必|一定要|必须|以后|之前|前都|提交前")
_ZH_PROHIBIT = re.compile(r"不要|别|不准|不许|禁止|不得|不能|而不是")
_ZH_SPECIAL = re.compile(r"(?:子代理|子智能体|子助手|subagent).*(?:审查|审核|检查|review)|harness")
# German and Spanish.
_DE = re.compile(
    r"^\W*(?:keine?n?|nie|niemals|immer)\b|\b(?:immer|nie|niemals|stets|jedes mal|vor jedem|vor jeder|nach jedem|"
    r"nach jeder|grundsätzlich|ausschließlich|statt|anstatt|verboten|zuerst|ab jetzt|ab sofort|von nun an|künftig|"
    r"in zukunft)\b|\b(?:darf|dürfen|muss|müssen)\b",
    re.IGNORECASE,
)
_ES = re.compile(
    r"\b(?:siempre|nunca|jamás|antes de|cada vez|en lugar de|en vez de|prohibido|deben?|tienes que|hay que|"
    r"a partir de ahora|de ahora en adelante)\b|"
    r"^\W*sin\s+\w+|^\W*no\s+\w+(?:es|as)\b",
    re.IGNORECASE,
)


def instruction_kind(sentence: str) -> str | None:
    """The kind of a user sentence that states a standing instruction (``KINDS``), else None (see the module)."""
    text = normalise(" ".join(sentence.split()))
    core = LEADING.sub("", text).strip()
    if not core or _QUESTION.search(core) or _THANKS.match(core) or _MOMENT.search(core):
        return None
    if _DESCRIBES.search(core) or _ERROR_TEXT.match(core) or _CJK_THANKS.search(core):
        return None
    if _HANGUL.search(core):
        if _KO_SPECIAL.search(core):
            return "rule"
        return "rule" if _KO_GENERAL.search(core) or _KO_PROHIBIT.search(core) else None
    if _KANA.search(core):
        if _JA_SPECIAL.search(core):
            return "rule"
        return "rule" if _JA_GENERAL.search(core) or _JA_PROHIBIT.search(core) else None
    if _HAN.search(core):
        if _ZH_SPECIAL.search(core):
            return "rule"
        return "rule" if _ZH_GENERAL.search(core) or _ZH_PROHIBIT.search(core) else None
    kind = classify(core)
    if kind in KINDS and not is_request(core):
        return kind
    if _HARNESS.search(core) or _PLACE.search(core):
        return "value"
    if _SUBAGENT.search(core) or _TERSE_NO.match(core) or _STOP_DOING.match(core):
        return "rule"
    if _EN_CONVENTION.search(core):
        return "preference"
    if _EN_GENERAL.search(core) and not is_request(core):
        return "rule"
    if _SCOPE.search(core) and not _TASK.match(core):
        return "preference"
    if _DE.search(core) or _ES.search(core):
        return "rule"
    return None


def instructions(text: str) -> Iterator[tuple[str, str]]:
    """(sentence, kind) of each standing instruction in a user message, in order."""
    for sentence in own_sentences(text):
        kind = instruction_kind(sentence)
        if kind is not None:
            yield sentence, kind
