"""A textured, lit OpenGL renderer for the embedded backend (headless EGL on Mesa's llvmpipe).

:mod:`~vlnverse.sim.gl.context` makes the context and resolves ``renderer="auto"``;
:class:`~vlnverse.sim.gl.renderer.GLRenderer` draws a scene (imported lazily: it needs moderngl).
"""

from vlnverse.sim.gl.context import RENDERERS, resolve_renderer

__all__ = ["RENDERERS", "resolve_renderer"]
