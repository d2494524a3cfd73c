"""Checks of generated text against the scene graph: hallucinated objects and refusals."""

from __future__ import annotations

import re
from collections.abc import Iterable

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
