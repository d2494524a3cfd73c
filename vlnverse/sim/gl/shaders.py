"""GLSL of the scene renderer: one pass writes colour, the depth buffer and prim ids.

Vertices carry their body (0 = static geometry; others read a model matrix from the
``poses`` texture, one row per body), so movable objects move without re-uploading any
geometry. Texture coordinates come from object-space positions (box projection along the
face's dominant axis), in world units. The lights' and rooms' uniform arrays are sized
by :func:`scene_fragment` in steps (the loop over a room's lights reads its bounds from a
uniform), so scenes of different light and room counts share one program text, and
llvmpipe compiles the scene shader once per process, not once per scene.
"""

#: The vertex buffer's layout: position, normal, colour, material (layer, 1 / tile size),
#: then body row and prim index + 1.
VERTEX_FORMAT = "3f 3f 3f 2f 2i"
ATTRIBUTES = ("in_position", "in_normal", "in_colour", "in_material", "in_ids")

VERTEX = """
#version 330
uniform mat4 view_proj;
uniform sampler2D poses;
in vec3 in_position;
in vec3 in_normal;
in vec3 in_colour;
in vec2 in_material;
in ivec2 in_ids;
out vec3 v_world;
out vec2 v_uv;
flat out vec3 v_normal;
flat out vec3 v_colour;
flat out float v_layer;
flat out int v_id;

void main() {
    mat4 model = mat4(texelFetch(poses, ivec2(0, in_ids.x), 0), texelFetch(poses, ivec2(1, in_ids.x), 0),
                      texelFetch(poses, ivec2(2, in_ids.x), 0), texelFetch(poses, ivec2(3, in_ids.x), 0));
    vec4 world = model * vec4(in_position, 1.0);
    vec3 axis = abs(in_normal);
    vec2 uv = axis.z >= max(axis.x, axis.y) ? in_position.xy : (axis.x >= axis.y ? in_position.yz : in_position.xz);
    v_world = world.xyz;
    v_uv = uv * in_material.y;
    v_normal = mat3(model) * in_normal;
    v_colour = in_colour;
    v_layer = in_material.x;
    v_id = in_ids.y;
    gl_Position = view_proj * world;
}
"""

FRAGMENT = """
#version 330
uniform vec3 eye;
uniform sampler2DArray materials;
uniform usampler2D rooms;
uniform vec3 room_frame;  // origin x, origin y, cells per metre
uniform vec4 lights[N_LIGHTS];  // x, y, z, power
uniform vec3 light_colours[N_LIGHTS];
uniform ivec2 room_lights[N_ROOMS];  // first light, count
uniform float ambient;
uniform float exposure;
uniform float softness;
in vec3 v_world;
in vec2 v_uv;
flat in vec3 v_normal;
flat in vec3 v_colour;
flat in float v_layer;
flat in int v_id;
layout(location = 0) out vec4 out_colour;
layout(location = 1) out int out_id;

vec3 filmic(vec3 x) {  // Hejl and Burgess-Dawson's filmic curve; its output is already gamma-encoded
    x = max(vec3(0.0), x - 0.004);
    return (x * (6.2 * x + 0.5)) / (x * (6.2 * x + 1.7) + 0.06);
}

void main() {
    vec3 normal = normalize(v_normal);
    if (dot(normal, eye - v_world) < 0.0) normal = -normal;
    ivec2 cell = ivec2(floor((v_world.xy + 0.06 * normal.xy - room_frame.xy) * room_frame.z));
    cell = clamp(cell, ivec2(0), textureSize(rooms, 0) - 1);
    ivec2 range = room_lights[int(texelFetch(rooms, cell, 0).r)];
    vec3 light = vec3(ambient);
    for (int i = range.x; i < range.x + range.y; ++i) {
        vec3 to_light = lights[i].xyz - v_world;
        float d2 = dot(to_light, to_light);
        float facing = max(dot(normal, to_light), 0.0) * inversesqrt(d2);
        light += light_colours[i] * (lights[i].w * (0.15 + 0.85 * facing) / (d2 + softness));
    }
    float detail = texture(materials, vec3(v_uv, v_layer)).r * (255.0 / 128.0);
    out_colour = vec4(filmic(v_colour * detail * light * exposure), 1.0);
    out_id = v_id;
}
"""


#: The vertex shader of the one-pass rig (:mod:`vlnverse.sim.gl.panorama`): the id it
#: passes on is the vertex's triangle (vertices are not shared) plus one, not its prim's.
TRIANGLE_VERTEX = VERTEX.replace("v_id = in_ids.y;", "v_id = gl_VertexID / 3 + 1;")


ARRAY_SLOTS = 64
"""The least size of the lights' and rooms' uniform arrays: the bundled and generated
scenes fit (within the 1024 uniform components any GL 3.3 fragment shader may have)."""


def array_slots(count: int) -> int:
    """The uniform array size for ``count`` entries: :data:`ARRAY_SLOTS`, or the next power
    of two for more."""
    return max(ARRAY_SLOTS, 1 << max(count - 1, 0).bit_length())


def scene_fragment(light_slots: int, room_slots: int) -> str:
    """The scene's fragment shader with arrays of ``light_slots`` lights and ``room_slots``
    rooms (see :func:`array_slots`)."""
    return FRAGMENT.replace("N_LIGHTS", str(light_slots)).replace("N_ROOMS", str(room_slots))
