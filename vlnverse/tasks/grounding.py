"""Checks of generated text against the scene graph and the path.

* :func:`hallucinated_objects`: object nouns no scene category contains;
* :func:`is_refusal`: the model declined;
* :func:`target_problem`: does the text name *the* target — its category (or a synonym)
  as the head of a noun phrase, not as the modifier of another noun ("the TV stand" is
  not the TV), and never with a colour the target does not have;
* :func:`route_problem`: do the turns of a fine instruction match the path's, in order,
  and are its landmarks mentioned in the order they are passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Household object nouns an instruction may name; a noun that no scene category
#: contains is a hallucination. Scene categories are added per scene.
HOUSEHOLD_NOUNS = frozenset("""
armchair bathtub bed bench bin blanket bookcase bookshelf bottle bowl box cabinet candle carpet chair
chandelier clock closet computer couch counter cup curtain cushion desk dishwasher dresser drawer dryer
fan faucet fireplace fridge guitar heater lamp laptop microwave mirror monitor mug nightstand ottoman oven
painting piano picture pillow plant plate printer radiator refrigerator rug shelf shower sink sofa speaker
stool stove table television toilet towel trashcan tv vase wardrobe washer
""".split())

SYNONYMS = {
    "couch": "sofa", "refrigerator": "fridge", "television": "tv", "bookcase": "bookshelf",
    "painting": "picture", "mug": "cup", "trashcan": "trash", "bin": "trash", "closet": "wardrobe",
    "cushion": "pillow", "carpet": "rug", "washer": "washing",
}

#: Colour words; the target's own colour is read from the scene graph.
COLOR_WORDS = frozenset("""
white black gray grey silver red blue navy green olive teal yellow orange pink purple brown beige cream tan
gold golden
""".split())
_COLOR_ALIASES = {"grey": "gray", "golden": "gold"}
#: Nouns that turn a preceding object noun into a modifier ("tv stand", "cup holder").
COMPOUND_HEADS = frozenset("""
stand holder remote cabinet unit shelf rack console screen cover mount frame door handle top base lamp mat
""".split())
#: Words that end the adjectives before a noun.
_PHRASE_BREAK = frozenset("the a an on in at of to and with by near next from into onto beside behind".split())
_TURN = re.compile(
    r"\b(?:(?:turn|take|make|go|face|bear|veer)\s+(?:a\s+|to\s+your\s+|to\s+the\s+)?(left|right)(?:\s+turn)?"
    r"|(left|right)\s+turn|turn\s+(?:around|back)|u-turn)\b")

_REFUSAL = re.compile(
    r"\b(i'?m sorry|i am sorry|i cannot|i can'?t|i can not|i'?m unable|i am unable|as an ai|"
    r"i won'?t be able|unable to (help|assist|comply))\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")


def is_refusal(text: str) -> bool:
    """Whether the answer declines the task."""
    return bool(_REFUSAL.search(text or ""))


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2] in HOUSEHOLD_NOUNS:
        return word[:-2]
    if word.endswith("s") and word[:-1] in HOUSEHOLD_NOUNS:
        return word[:-1]
    return word


def scene_words(categories: Iterable[str]) -> set[str]:
    """Every word of the scene's categories (``"dining table"`` → dining, table)."""
    words: set[str] = set()
    for category in categories:
        words.update(_WORD.findall(category.lower().replace("_", " ")))
    return words


def hallucinated_objects(text: str, categories: Iterable[str]) -> list[str]:
    """Object nouns in ``text`` that no scene category contains (sorted, unique)."""
    present = scene_words(categories)
    found = set()
    for word in _WORD.findall((text or "").lower()):
        noun = _stem(word)
        if noun not in HOUSEHOLD_NOUNS:
            continue
        if noun in present or SYNONYMS.get(noun) in present:
            continue
        if any(alias in present for alias, canon in SYNONYMS.items() if canon == noun):
            continue
        found.add(noun)
    return sorted(found)


def _color(word: str) -> str:
    return _COLOR_ALIASES.get(word, word)


def _names(category: str) -> list[list[str]]:
    """Token sequences that name ``category``: itself, its head noun, their synonyms."""
    words = _WORD.findall(category.lower().replace("_", " "))
    heads = {words[-1]} | {alias for alias, canon in SYNONYMS.items() if canon == words[-1]}
    heads |= {SYNONYMS[words[-1]]} if words[-1] in SYNONYMS else set()
    return [words] + [[h] for h in sorted(heads)]


def _mentions(tokens: list[str], category: str, stop_before: frozenset[str]) -> list[int]:
    """Token indices where ``category`` is named as a noun-phrase head."""
    found = []
    for name in _names(category):
        n = len(name)
        for i in range(len(tokens) - n + 1):
            if [_stem(t) for t in tokens[i:i + n]] != name:
                continue
            after = tokens[i + n] if i + n < len(tokens) else ""
            if _stem(after) in stop_before:
                continue
            found.append(i)
    return sorted(set(found))


def target_problem(text: str, category: str, color: str | None, categories: Iterable[str] = ()) -> str | None:
    """Why ``text`` does not name the target (None when it does).

    The target is named when its category, its head noun or a synonym stands as the head
    of a noun phrase (not followed by a noun that makes it a modifier: "tv stand"); every
    colour word among the adjectives of such a mention must be the target's colour.
    """
    tokens = _WORD.findall((text or "").lower())
    compounds = COMPOUND_HEADS | HOUSEHOLD_NOUNS | scene_words(categories)
    mentions = _mentions(tokens, category, frozenset(compounds))
    if not mentions:
        return f"does not name the target ({category})"
    if not color:
        return None
    own = {_color(w) for w in _WORD.findall(color.lower())}
    for i in mentions:
        before = []
        for word in reversed(tokens[max(0, i - 3):i]):
            if word in _PHRASE_BREAK:
                break
            before.append(word)
        wrong = sorted({_color(w) for w in before if w in COLOR_WORDS} - own)
        if not wrong:
            return None
    return f"names the target ({category}) with a colour it does not have ({', '.join(wrong)}; it is {color})"


def turn_sequence(text: str) -> list[str]:
    """The turns a text commands, in order: ``left``, ``right`` or ``around``."""
    return [m.group(1) or m.group(2) or "around" for m in _TURN.finditer((text or "").lower())]


def route_problem(text: str, turns: Sequence[str], landmarks: Sequence[str]) -> str | None:
    """Why a fine instruction contradicts its path (None when it does not).

    Args:
        text: The instruction.
        turns: The path's turns in order (``left``/``right``/``around``; ``straight`` ignored).
        landmarks: Categories of the landmarks in the order the path passes them.
    """
    expected = [t for t in turns if t != "straight"]
    said = turn_sequence(text)
    if said != expected:
        return (f"its turns ({', '.join(said) or 'none'}) are not the path's "
                f"({', '.join(expected) or 'none'})")
    tokens = _WORD.findall((text or "").lower())
    firsts = []
    for category in dict.fromkeys(landmarks):
        where = _mentions(tokens, category, frozenset())
        if where:
            firsts.append((where[0], category))
    order = [c for _, c in sorted(firsts)]
    if order != [c for _, c in firsts]:
        return f"it mentions the landmarks in the wrong order ({', '.join(order)})"
    return None
