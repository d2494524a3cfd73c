"""Messages, images, parameters and request hashing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from vlnverse.errors import ConfigError
from vlnverse.llm import (
    ChatMessage,
    GenerationParams,
    ImagePart,
    LLMRequest,
    LLMResponse,
    encode_png,
)


@pytest.mark.parametrize("shape", [(7, 5, 3), (4, 9), (3, 3, 4), (1, 1, 3)])
def test_png_encoding_round_trips(shape: tuple[int, ...], tmp_path) -> None:
    image = np.random.default_rng(1).integers(0, 256, size=shape, dtype=np.uint8)
    path = tmp_path / "x.png"
    path.write_bytes(encode_png(image))
    decoded = np.asarray(Image.open(path))
    assert decoded.shape == image.shape and np.array_equal(decoded, image)
    assert encode_png(image) == encode_png(image.copy())


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((4, 4, 3), np.float32), "uint8"),
        (np.zeros((4, 4, 2), np.uint8), "shape"),
        (np.zeros((0, 4, 3), np.uint8), "empty"),
    ],
)
def test_bad_arrays_are_rejected(bad: np.ndarray, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ImagePart.from_array(bad)


def test_image_part_from_bytes_and_data_url() -> None:
    png = encode_png(np.zeros((2, 2, 3), np.uint8))
    part = ImagePart.coerce(png)
    assert part.mime == "image/png" and part.data_url().startswith("data:image/png;base64,iVBOR")
    jpeg = ImagePart(b"\xff\xd8\xff\xe0fake-jpeg-body")
    assert jpeg.mime == "image/jpeg"
    with pytest.raises(ConfigError, match="neither PNG nor JPEG"):
        ImagePart(b"GIF89a")
    with pytest.raises(ConfigError, match="does not match"):
        ImagePart(png, mime="image/jpeg")
    with pytest.raises(ConfigError, match="detail"):
        ImagePart(png, detail="ultra")
    with pytest.raises(ConfigError, match="uint8 array"):
        ImagePart.coerce("frame.png")


def test_messages_validate_roles_and_parts() -> None:
    with pytest.raises(ConfigError, match="role"):
        ChatMessage("tool", ("x",))
    with pytest.raises(ConfigError, match="only user messages"):
        ChatMessage("assistant", ("x", ImagePart.from_array(np.zeros((2, 2, 3), np.uint8))))
    with pytest.raises(ConfigError, match="'role' and 'content'"):
        ChatMessage.coerce({"role": "user", "text": "x"})
    message = ChatMessage.coerce(
        {"role": "user", "content": "look", "images": [np.zeros((2, 2, 3), np.uint8)]}
    )
    assert message.text == "look" and len(message.images) == 1


def test_request_hash_is_stable_and_sensitive() -> None:
    frame = np.zeros((3, 3, 3), np.uint8)
    base = LLMRequest.build(
        "gpt-4o", [ChatMessage.user("hi", images=[frame])], temperature=0.5, seed=1
    )
    same = LLMRequest.build(
        "gpt-4o",
        [{"role": "user", "content": "hi", "images": [frame.copy()]}],
        seed=1,
        temperature=0.5,
    )
    assert base.key == same.key and len(base.key) == 64
    assert (
        LLMRequest.build("m", "hello").key == LLMRequest.build("m", [ChatMessage.user("hello")]).key
    )
    variants = [
        LLMRequest.build(
            "gpt-4o-mini", [ChatMessage.user("hi", images=[frame])], temperature=0.5, seed=1
        ),
        LLMRequest.build(
            "gpt-4o", [ChatMessage.user("hi ", images=[frame])], temperature=0.5, seed=1
        ),
        LLMRequest.build(
            "gpt-4o", [ChatMessage.user("hi", images=[frame + 1])], temperature=0.5, seed=1
        ),
        LLMRequest.build(
            "gpt-4o", [ChatMessage.user("hi", images=[frame])], temperature=0.6, seed=1
        ),
        LLMRequest.build(
            "gpt-4o", [ChatMessage.user("hi", images=[frame])], temperature=0.5, seed=2
        ),
        LLMRequest.build(
            "gpt-4o",
            [ChatMessage.user("hi", images=[frame])],
            temperature=0.5,
            seed=1,
            response_format="json",
        ),
        LLMRequest.build(
            "gpt-4o",
            [ChatMessage.system("s"), ChatMessage.user("hi", images=[frame])],
            temperature=0.5,
            seed=1,
        ),
    ]
    assert len({base.key, *(v.key for v in variants)}) == len(variants) + 1


def test_known_hash_value() -> None:
    """The canonical form is part of the transcript/cache format: changing it breaks old files."""
    key = LLMRequest.build("m", "hello").key
    assert key == "0ed0ad3a5cfffb4b85ddf0641a704ef87dd87a5d95de1e61df373260f45ba1b0"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"seed": "1"}, "seed"),
        ({"response_format": "xml"}, "response_format"),
        ({"top_p": 0}, "top_p"),
        ({"n": 0}, "n must"),
        ({"temp": 0.1}, "unknown generation parameter"),
    ],
)
def test_bad_params(params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GenerationParams.from_kwargs(**params)


def test_request_needs_messages_and_model() -> None:
    with pytest.raises(ConfigError, match="at least one message"):
        LLMRequest.build("m", [])
    with pytest.raises(ConfigError, match="model"):
        LLMRequest.build("", "x")


def test_response_round_trip() -> None:
    response = LLMResponse(
        "a", "m", choices=("a", "b"), cost_usd=0.5, finish_reason="stop", key="k"
    )
    assert LLMResponse.from_dict(response.to_dict()) == response
    assert LLMResponse.from_dict(response.to_dict(), cached=True).cached
    with pytest.raises(ConfigError, match="text must equal"):
        LLMResponse("a", "m", choices=("b",))


def test_jpeg_image_parts() -> None:
    import io

    import numpy as np
    from PIL import Image

    from vlnverse.llm import ImagePart

    view = np.random.default_rng(0).integers(0, 256, (32, 48, 3), dtype=np.uint8)
    part = ImagePart.from_array(view, "low", jpeg=True)
    assert part.mime == "image/jpeg" and part.data_url().startswith("data:image/jpeg;base64,")
    with Image.open(io.BytesIO(part.data)) as picture:
        assert picture.size == (48, 32) and picture.format == "JPEG"
    assert ImagePart.from_array(view, "low", jpeg=True).sha256 == part.sha256  # deterministic
    with pytest.raises(ConfigError):
        ImagePart.from_array(view[..., 0], jpeg=True)
