"""Shader programs shared by the renderers of one GL context.

llvmpipe compiles a program's shaders to machine code at its first draw (about 0.2-0.3 s
for the scene shader on a CPU core, more than the rest of building an env), and compiles
again for a second program of the same source. Renderers whose shaders are the same text
(an eval worker's concurrent envs of one scene, scenes with as many lights and rooms)
share one program here; the last :func:`release` frees it. Uniforms are the program's
state, so a renderer sets its own again when another renderer used the program since
(:meth:`SharedProgram.claim`). Callers hold the context's lock
(:func:`vlnverse.sim.gl.context.current_context`), which serialises all of this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class SharedProgram:
    """One compiled program, the renderers using it, and which of them set its uniforms last."""

    key: tuple[Any, ...]
    context: Any
    program: Any
    users: int = 0
    owner: object = field(default=None, repr=False)

    def claim(self, owner: object, set_uniforms: Callable[[], None]) -> None:
        """Make ``owner``'s uniforms the program's: ``set_uniforms()`` runs unless ``owner``
        set them last."""
        if self.owner is not owner:
            set_uniforms()
            self.owner = owner


_programs: dict[tuple[Any, ...], SharedProgram] = {}


def acquire(ctx: Any, vertex_shader: str, fragment_shader: str) -> SharedProgram:
    """The context's program of these shaders (compiled on the first call), for one more user."""
    key = (id(ctx), vertex_shader, fragment_shader)
    shared = _programs.get(key)
    if shared is None or shared.context is not ctx:
        program = ctx.program(vertex_shader=vertex_shader, fragment_shader=fragment_shader)
        shared = _programs[key] = SharedProgram(key, ctx, program)
    shared.users += 1
    return shared


def release(shared: SharedProgram, user: object) -> None:
    """``user`` is done with the program; the last user frees it."""
    if shared.owner is user:
        shared.owner = None
    shared.users -= 1
    if shared.users <= 0:
        if _programs.get(shared.key) is shared:
            del _programs[shared.key]
        shared.program.release()
