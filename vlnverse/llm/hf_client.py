"""A local transformers causal language model as an :class:`LLMClient` (``hf`` extra).

torch and transformers are imported when a client is built, never at module import. The
model is loaded from a local directory only (``local_files_only``): a benchmark run must
not download weights behind the user's back. A checkpoint whose processor takes images
(an ``image_processor``, e.g. LLaVA or Qwen-VL layouts) is loaded as an image-text-to-text
model and gets the messages' images; other checkpoints are text-only and refuse images.
``response_format="json"`` and JSON schemas cannot be enforced here; the prompt must ask
for JSON (:mod:`vlnverse.llm.structured` does) and the answer is validated.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from vlnverse.errors import ConfigError, DependencyNotInstalled, LLMError, LLMRequestError
from vlnverse.llm.base import LLMClient
from vlnverse.llm.context import check_context
from vlnverse.llm.pricing import PriceTable
from vlnverse.llm.types import LLMRequest, LLMResponse, Usage

log = logging.getLogger(__name__)

DEFAULT_MAX_NEW_TOKENS = 256


def require_hf() -> tuple[Any, Any]:
    """Import and return ``(torch, transformers)``.

    Raises:
        DependencyNotInstalled: either is missing (the message gives the pip command).
    """
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise DependencyNotInstalled(
            "torch/transformers",
            extra="hf",
            purpose=f"local transformers models, hf:PATH; {exc}",
        ) from exc
    return torch, transformers


def _plain_prompt(messages: list[dict[str, str]]) -> str:
    """A role-tagged prompt for tokenizers that ship no chat template."""
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nassistant:"


class HFClient(LLMClient):
    """Generation with a local transformers causal LM.

    Args:
        path: directory holding the model and tokenizer (``save_pretrained`` layout).
        name: model name used in request hashes; default: ``path`` as given.
        device: torch device (``cpu``, ``cuda``, ``cuda:1``).
        dtype: torch dtype name (``float32``, ``bfloat16``...); None: the checkpoint's.
        max_new_tokens: default generation cap when a request sets no ``max_tokens``.
        context: the context window in tokens the agents fit their prompts to (None: not
            known; ``hf:PATH?context=N``).
        prices: price table (local models are usually not in it: cost None).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None = None,
        device: str = "cpu",
        dtype: str | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        context: int | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        super().__init__(name or str(path), prices=prices)
        if check_context(context) is not None:
            self.learn_context(context, "spec")
        torch, transformers = require_hf()
        self._torch = torch
        self.path = Path(path)
        if not self.path.is_dir():
            raise ConfigError(f"hf model directory {self.path} does not exist")
        if max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.max_new_tokens = max_new_tokens
        self.device = device
        load_kwargs: dict[str, Any] = {"local_files_only": True}
        if dtype is not None:
            if not isinstance(getattr(torch, dtype, None), torch.dtype):
                raise ConfigError(f"unknown torch dtype {dtype!r}")
            load_kwargs["dtype"] = getattr(torch, dtype)
        try:
            self.processor = _image_processor(transformers, self.path)
            if self.processor is not None:
                self.tokenizer = self.processor.tokenizer
                self.hf_model = transformers.AutoModelForImageTextToText.from_pretrained(
                    self.path, **load_kwargs
                )
            else:
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                    self.path, local_files_only=True
                )
                self.hf_model = transformers.AutoModelForCausalLM.from_pretrained(
                    self.path, **load_kwargs
                )
        except (OSError, ValueError) as exc:
            raise LLMError(f"cannot load a transformers model from {self.path}: {exc}") from exc
        self._lock = threading.Lock()  # one generation at a time (and the RNG seeding with it)
        self.hf_model.to(device)
        self.hf_model.eval()
        log.info("loaded %s on %s", self.path, device)

    @property
    def takes_images(self) -> bool:
        """Whether the checkpoint's processor takes images."""
        return self.processor is not None

    def prompt_text(self, request: LLMRequest) -> str:
        """The prompt string: the chat template (the processor's for an image model, with an
        image placeholder where each image is), else role-tagged lines."""
        if self.processor is not None:
            messages = [
                {"role": m.role, "content": [
                    {"type": "text", "text": p} if isinstance(p, str) else {"type": "image"}
                    for p in m.parts]}
                for m in request.messages
            ]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        if any(m.images for m in request.messages):
            raise LLMRequestError(
                f"{self.model} is a text-only local model (its processor takes no images); "
                "use a vision-language checkpoint, or serve one with an OpenAI-compatible server"
            )
        messages = [{"role": m.role, "content": m.text} for m in request.messages]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        return _plain_prompt(messages)

    def send(self, request: LLMRequest) -> LLMResponse:
        if self.hf_model is None:
            raise LLMRequestError(f"{self.model}: the client was closed")
        torch = self._torch
        params = request.params
        encoded = self._encode(request).to(self.device)
        prompt_len = int(encoded["input_ids"].shape[1])
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        sample = params.temperature > 0
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens or self.max_new_tokens,
            "do_sample": sample,
            "num_return_sequences": params.n,
            "pad_token_id": pad,
        }
        if sample:
            gen_kwargs["temperature"] = params.temperature
            gen_kwargs["top_p"] = params.top_p if params.top_p is not None else 1.0
            gen_kwargs["top_k"] = 0
        elif params.n > 1:
            raise ConfigError("n > 1 needs temperature > 0 (greedy decoding gives one answer)")
        devices = [self.device] if str(self.device).startswith("cuda") else []
        with self._lock, torch.random.fork_rng(devices=devices), torch.inference_mode():
            if params.seed is not None:
                torch.manual_seed(params.seed)
            output = self.hf_model.generate(**encoded, **gen_kwargs)
        texts, finish, completion_tokens = [], [], 0
        for row in output[:, prompt_len:].tolist():
            stop_at = row.index(eos) + 1 if eos is not None and eos in row else len(row)
            completion_tokens += stop_at
            text = self.tokenizer.decode(row[:stop_at], skip_special_tokens=True)
            reason = "stop" if stop_at < len(row) or (eos is not None and eos in row) else "length"
            for stop in params.stop:
                if stop in text:
                    text, reason = text[: text.index(stop)], "stop"
            texts.append(text)
            finish.append(reason)
        usage = Usage(prompt_len, completion_tokens)  # the prompt is counted once, as APIs bill it
        return LLMResponse(
            text=texts[0],
            model=self.model,
            usage=usage,
            cost_usd=self.cost(usage),
            choices=tuple(texts),
            finish_reason=finish[0],
            key=request.key,
        )

    def _encode(self, request: LLMRequest) -> Any:
        """The model inputs of ``request`` (token ids; pixel values for an image model)."""
        prompt = self.prompt_text(request)
        if self.processor is None:
            return self.tokenizer(prompt, return_tensors="pt")
        images = [_pil(image) for m in request.messages for image in m.images]
        return self.processor(text=prompt, images=images or None, return_tensors="pt")

    def close(self) -> None:
        self.hf_model = None


def _image_processor(transformers: Any, path: Path) -> Any:
    """The checkpoint's processor when it takes images, else None (text-only models)."""
    if not (path / "preprocessor_config.json").is_file() and not (path / "processor_config.json").is_file():
        return None
    processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
    return processor if getattr(processor, "image_processor", None) is not None else None


def _pil(image: Any) -> Any:
    """An :class:`~vlnverse.llm.images.ImagePart` as a PIL RGB image."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(image.data)) as picture:
        return picture.convert("RGB")
