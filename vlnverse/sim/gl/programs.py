"""Shader programs and textures shared by the renderers of one GL context.

llvmpipe compiles a program's shaders to machine code at its first draw (about 0.2-0.3 s
for the scene shader on a CPU core, more than the rest of building an env), and compiles
again for a second program of the same source. Renderers whose shaders are the same text
(every scene whose lights and rooms fit the shader's arrays: :func:`~vlnverse.sim.gl.shaders.array_slots`)
share one program here, and every renderer shares the material texture array (the same
bytes for all; uploading it and building its mipmaps is a tenth of an env's build); the
last :func:`release` frees each. Uniforms are the program's state, so a renderer sets its
own again when another renderer used the program since (:meth:`Shared.claim`). Callers
hold the context's lock (:func:`vlnverse.sim.gl.context.current_context`), which
serialises all of this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Shared:
    """One GL object (a compiled program, a texture), its users, and which of them set its
    uniforms last."""

    key: tuple[Any, ...]
    context: Any
    value: Any
    users: int = 0
    owner: object = field(default=None, repr=False)

    def claim(self, owner: object, set_uniforms: Callable[[], None]) -> None:
        """Make ``owner``'s uniforms the program's: ``set_uniforms()`` runs unless ``owner``
        set them last."""
        if self.owner is not owner:
            set_uniforms()
            self.owner = owner


_shared: dict[tuple[Any, ...], Shared] = {}


def acquire(ctx: Any, vertex_shader: str, fragment_shader: str) -> Shared:
    """The context's program of these shaders (compiled on the first call), for one more user."""
    return share(ctx, ("program", vertex_shader, fragment_shader),
                 lambda: ctx.program(vertex_shader=vertex_shader, fragment_shader=fragment_shader))


def share(ctx: Any, key: tuple[Any, ...], make: Callable[[], Any]) -> Shared:
    """The context's object of ``key`` (``make()`` on the first call), for one more user; it
    must never be changed by a user, only read."""
    key = (id(ctx), *key)
    shared = _shared.get(key)
    if shared is None or shared.context is not ctx:
        shared = _shared[key] = Shared(key, ctx, make())
    shared.users += 1
    return shared


def release(shared: Shared, user: object) -> None:
    """``user`` is done with the object; the last user frees it."""
    if shared.owner is user:
        shared.owner = None
    shared.users -= 1
    if shared.users <= 0:
        if _shared.get(shared.key) is shared:
            del _shared[shared.key]
        shared.value.release()
