"""The words a search box takes, as an FTS5 expression: ``timeout retry`` (both words), ``"connection reset"`` (the
phrase), ``migrat*`` (a prefix), ``OR``, ``AND``, ``NOT`` (upper case) and parentheses; a word with punctuation
(``TypeError:``, ``foo.bar``) is the phrase of its words. And the words an exact ``-F`` string must contain, to
narrow its candidates (``literal_words``).

Scripts written without spaces between words (Chinese, Japanese), and Korean, whose particles attach to the word
before them (``설정을``, ``Redis를``), are not words to unicode61: a run of them is one token. So the index keeps a
second column, ``cjk`` (``cjk_text``): every token of the text that holds a character of those scripts, each such
character a token of its own and the rest of the token (``Redis``) one word, the tokens of the text that hold none
left out (a separator token, ``GAP``, where they were). A word or phrase of those scripts is searched there as the
phrase of its characters: it finds every entry holding it anywhere, as ``-F`` would (``설정`` in ``설정을``,
``数据库`` in ``我们的数据库连接``). Any other word is searched in both columns (``Redis`` in ``Redis를``)."""

from __future__ import annotations

import re

from pi_compact.errors import UsageError

_OPERATORS = frozenset({"OR", "AND", "NOT"})
# How deep parentheses may nest, and how many words and operators a query may hold: FTS5's parser gives up past
# about 90 levels of groups ("parser stack overflow"), and a query is typed, not generated.
MAX_DEPTH = 32
MAX_TOKENS = 1000
_WORDISH = re.compile(r"[^\W_]", re.UNICODE)
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

# The scripts searched by character (``cjk_text``): Thai, Lao, Myanmar, Hangul Jamo, Khmer, kana, Bopomofo, Hangul
# compatibility Jamo, CJK ideographs (and their extensions), Yi, Hangul syllables, half-width kana.
_NOSPACE_CLASS = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff"
)
NOSPACE = re.compile(f"[{_NOSPACE_CLASS}]")
# A token as unicode61 makes them (letters and digits), the marks of those scripts kept inside it.
_TOKEN = re.compile(f"(?:[^\\W_]|[{_NOSPACE_CLASS}])+")
_PIECE = re.compile(f"[{_NOSPACE_CLASS}]|(?:(?![{_NOSPACE_CLASS}])[^\\W_])+")
GAP = "\uf8ff"  # a private-use character: a token to unicode61 ("Co"), never in a query (``_operand`` refuses it)
TEXT_COLUMNS = "{text cjk}"


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, value) tokens: ``(``, ``)``, ``op`` (OR/AND/NOT), ``term`` and ``phrase`` (value with a trailing
    ``*`` for a prefix)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            out.append((ch, ch))
            i += 1
        elif ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise UsageError(f"the query has an unclosed quote at character {i + 1}: {text!r}")
            value = text[i + 1 : end]
            i = end + 1
            star = i < n and text[i] == "*"
            if star:
                i += 1
            out.append(("phrase", value + ("*" if star else "")))
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '()"':
                j += 1
            word = text[i:j]
            i = j
            out.append(("op", word) if word in _OPERATORS else ("term", word))
    return out


def _pieces(text: str) -> list[str]:
    """``text``'s tokens as the ``cjk`` column holds them: each character of a script without spaces alone, the
    other runs of letters and digits whole."""
    return [m.group() for token in _TOKEN.finditer(text) for m in _PIECE.finditer(token.group())]


def cjk_text(text: str) -> str:
    """The ``cjk`` column of ``text``: its tokens that hold a character of a script without spaces, as pieces
    (``_pieces``), ``GAP`` where tokens without one were left out; empty when it holds none (most texts)."""
    if text.isascii() or NOSPACE.search(text) is None:
        return ""
    out: list[str] = []
    gap = False
    for token in _TOKEN.finditer(text):
        word = token.group()
        if NOSPACE.search(word) is None:
            gap = True
            continue
        if gap and out:
            out.append(GAP)
        gap = False
        out.extend(m.group() for m in _PIECE.finditer(word))
    return " ".join(out)


def _operand(kind: str, value: str) -> str:
    prefix = value.endswith("*")
    words = value.rstrip("*") if prefix else value
    if not _WORDISH.search(words) or GAP in words:
        what = "phrase" if kind == "phrase" else "word"
        raise UsageError(
            f"the {what} {value!r} has no letters or digits to search for: use -F or --regex for punctuation"
        )
    star = "*" if prefix else ""
    if NOSPACE.search(words) is not None:
        return "cjk : " + _quote(" ".join(_pieces(words))) + star
    return f"{TEXT_COLUMNS} : {_quote(words)}{star}"


class _Parser:
    """Recursive descent over the tokens, into an FTS5 expression with every group in parentheses."""

    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.tokens = tokens
        self.at = 0
        self.text = text
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def fail(self, why: str) -> UsageError:
        return UsageError(
            f"bad query {self.text!r}: {why} (OR, AND and NOT go between words; quote them to search for them)"
        )

    def parse(self) -> str:
        expr = self.or_()
        if self.peek() is not None:
            raise self.fail("an unmatched ')'")
        return expr

    def or_(self) -> str:
        parts = [self.and_()]
        while self.peek() == ("op", "OR"):
            self.at += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def and_(self) -> str:
        parts = [self.not_()]
        while True:
            token = self.peek()
            if token == ("op", "AND"):
                self.at += 1
                parts.append(self.not_())
            elif token is not None and token[0] in ("term", "phrase", "("):
                parts.append(self.not_())
            else:
                break
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def not_(self) -> str:
        expr = self.primary()
        excluded: list[str] = []
        while self.peek() == ("op", "NOT"):
            self.at += 1
            excluded.append(self.primary())
        if not excluded:
            return expr
        # a NOT b NOT c is a NOT (b OR c): one group however many NOTs (nested, 100 of them overflow FTS5's parser)
        return f"({expr} NOT {excluded[0] if len(excluded) == 1 else '(' + ' OR '.join(excluded) + ')'})"

    def primary(self) -> str:
        token = self.peek()
        if token is None:
            raise self.fail("it ends where a word was expected")
        kind, value = token
        self.at += 1
        if kind == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.fail(f"parentheses nest more than {MAX_DEPTH} deep")
            expr = self.or_()
            self.depth -= 1
            if self.peek() != (")", ")"):
                raise self.fail("a '(' is not closed")
            self.at += 1
            return expr
        if kind in ("term", "phrase"):
            return _operand(kind, value)
        raise self.fail(f"{value!r} where a word was expected")


def fts_expression(text: str) -> str:
    """The FTS5 MATCH expression of a word query (UsageError when it is not one)."""
    tokens = _lex(text)
    if not tokens:
        raise UsageError("the query is empty: give words to search for")
    if len(tokens) > MAX_TOKENS:
        raise UsageError(
            f"the query holds {len(tokens):,} words, operators and parentheses; at most {MAX_TOKENS:,} "
            "(use --regex or -F for a long exact string)"
        )
    return _Parser(tokens, text).parse()


def literal_words(literal: str) -> str | None:
    """An FTS5 expression every text containing ``literal`` matches (None: no word of it can narrow).

    Only runs of ASCII letters and digits count, and only where the literal shows where the word starts: a run
    between two ASCII characters that are neither (a separator for the tokenizer, in the literal and so in the
    text) is a whole word; one that ends the literal is a word's prefix; the first run of a literal that starts
    with a letter or digit may be the end of a longer word and is not used."""
    terms: list[str] = []
    i, n = 0, len(literal)
    while i < n:
        if literal[i] not in _ASCII_ALNUM:
            i += 1
            continue
        j = i
        while j < n and literal[j] in _ASCII_ALNUM:
            j += 1
        left = i > 0 and literal[i - 1].isascii()
        right = j < n and literal[j].isascii()
        if left and right:
            terms.append(f"{TEXT_COLUMNS} : {_quote(literal[i:j])}")
        elif left and j == n:
            terms.append(f"{TEXT_COLUMNS} : {_quote(literal[i:j])}*")
        i = j
    return " AND ".join(dict.fromkeys(terms)) if terms else None
