"""Coarse-grained targets: which objects can be named unambiguously, and how.

A target is usable when a reader can single it out in its room: its category is unique
there, or its colour makes it unique, or a reference object does (the object it stands
on, or one it is next to / near that no same-category rival shares).
"""

from __future__ import annotations

from dataclasses import dataclass

from vlnverse.tasks.context import SceneContext

RELATION_WORDS = {"on": "on", "next_to": "next to", "near": "near"}


@dataclass(frozen=True)
class TargetDescription:
    """How to name a target object.

    Attributes:
        object_id: The target.
        phrase: Noun phrase without article (``"red cup"``).
        room_id: Its room.
        room: Its room's readable name (``"kitchen"``).
        reference_id: The reference object, if one is used.
        reference_phrase: The reference's noun phrase.
        relation: ``on`` / ``next_to`` / ``near`` (None without a reference).
        needs_reference: True when the reference is what disambiguates the target.
    """

    object_id: str
    phrase: str
    room_id: str | None
    room: str
    reference_id: str | None = None
    reference_phrase: str | None = None
    relation: str | None = None
    needs_reference: bool = False

    @property
    def relation_text(self) -> str:
        """``" on the wooden table"`` (leading space) or ``""``."""
        if self.reference_id is None:
            return ""
        return f" {RELATION_WORDS[self.relation]} the {self.reference_phrase}"


def describe_target(context: SceneContext, object_id: str) -> TargetDescription | None:
    """The unambiguous description of ``object_id``, or None when it cannot be singled out."""
    info = context.objects[object_id]
    if info.room_id is None:
        return None
    rivals = [o for o in context.objects_in_room(info.room_id)
              if o.category == info.category and o.object_id != object_id]
    base = dict(object_id=object_id, room_id=info.room_id, room=context.room_label(info.room_id))
    references = _references(context, object_id)
    if not rivals:
        ref = references[0] if references else None
        return _with_reference(context, base, info.phrase, ref, needs=False)
    if info.color and all(r.color != info.color for r in rivals):
        ref = references[0] if references else None
        return _with_reference(context, base, info.phrase, ref, needs=False)
    for ref_id, relation in references:
        ref_category = context.objects[ref_id].category
        shared = any(
            any(context.objects[other].category == ref_category and rel == relation
                for other, rel in _references(context, rival.object_id))
            for rival in rivals)
        if not shared:
            return _with_reference(context, base, info.phrase, (ref_id, relation), needs=True)
    return None


def _references(context: SceneContext, object_id: str) -> list[tuple[str, str]]:
    """Candidate references, best first: the support, then next_to, then near neighbours."""
    refs: list[tuple[str, str]] = []
    support = context.support(object_id)
    if support is not None:
        refs.append((support, "on"))
    target_category = context.objects[object_id].category
    for other, relation, _gap in context.neighbours(object_id):
        other_info = context.objects[other]
        if other == support or other_info.category == target_category:
            continue
        if context.support(other) == object_id:  # something standing on the target
            continue
        refs.append((other, relation))
    return refs


def _with_reference(context, base, phrase, ref, needs: bool) -> TargetDescription:
    if ref is None:
        return TargetDescription(phrase=phrase, **base)
    ref_id, relation = ref
    return TargetDescription(phrase=phrase, reference_id=ref_id, reference_phrase=context.objects[ref_id].phrase,
                             relation=relation, needs_reference=needs, **base)
