"""The cutting rules of :mod:`vlnverse.agents.fitting`: histories lose their oldest lines
first, scene text is shortened next, kept sections are never cut, and a prompt that cannot
fit says so."""

from __future__ import annotations

import pytest

from vlnverse.agents.fitting import cap_items, fit_prompt, window_budget
from vlnverse.agents.prompts import Prompt, Section
from vlnverse.llm.context import messages_bound, text_bound

INSTRUCTION = "Walk past the sofa, turn left at the kitchen door and stop next to the fridge."
SYSTEM = "You are a robot that follows route instructions."


def prompt(steps: int = 30, scene_words: int = 40) -> Prompt:
    built = Prompt()
    built.section("Instruction", INSTRUCTION)
    built.section("Your last steps", "\n".join(f"step {i}: moved to B (forward, 1.5 m)." for i in range(steps)),
                  cut="oldest")
    built.section("What you see around you", "\n".join(f"view {v}: " + "chair 2.1 m, table 3.0 m, " * scene_words
                                                        for v in range(12)), cut="shorten")
    built.section("Trajectory", "Place " + " ".join(str(p) for p in range(200)), cut="shorten_start")
    built.section("Reply format", 'Reply with one JSON object: {"action": "<one option>"}')
    return built


def sections(fit) -> dict[str, Section]:
    return {value.title: value for _, value in fit.prompt.parts if isinstance(value, Section)}


def test_a_prompt_within_its_budget_is_not_cut():
    built = prompt()
    fit = fit_prompt(built, SYSTEM, 100_000)
    assert fit.cuts == {} and fit.before == fit.after == messages_bound(built.messages(SYSTEM)) and fit.fits
    assert fit_prompt(built, SYSTEM, None).cuts == {}


def test_the_oldest_history_goes_first_and_the_newest_step_stays():
    built = prompt()
    full = fit_prompt(built, SYSTEM, None).before
    fit = fit_prompt(built, SYSTEM, full - 100)
    assert fit.fits and set(fit.cuts) == {"Your last steps"}  # the largest history goes first
    kept = sections(fit)
    history = kept["Your last steps"].body.splitlines()
    assert history[0].endswith("earlier line(s) cut to fit the context window)") and history[-1].startswith("step 29")
    assert 2 < len(history) < 31
    assert kept["What you see around you"] == sections(fit_prompt(built, SYSTEM, None))["What you see around you"]


def test_scene_text_is_shortened_before_the_instruction_which_is_never_cut():
    built = prompt()
    fit = fit_prompt(built, SYSTEM, 900)
    kept = sections(fit)
    assert fit.fits and "What you see around you" in fit.cuts and "Instruction" not in fit.cuts
    assert kept["Instruction"].body == INSTRUCTION and kept["Reply format"] == sections(fit_prompt(built, SYSTEM, None))["Reply format"]
    scene = kept["What you see around you"].body.splitlines()
    assert len(scene) == 12 and all(line.startswith(f"view {v}:") for v, line in enumerate(scene))
    assert kept["Trajectory"].body.endswith("198 199")  # the newest places stay
    assert fit.before - fit.after == pytest.approx(sum(fit.cuts.values()), abs=len(fit.cuts) * 2)
    assert fit.messages == fit.prompt.messages(SYSTEM)


def test_a_prompt_whose_kept_sections_exceed_the_budget_does_not_fit():
    built = Prompt()
    built.section("Instruction", INSTRUCTION * 40)
    fit = fit_prompt(built, SYSTEM, 100)
    assert not fit.fits and fit.after > fit.budget and fit.cuts == {}


def test_budgets_and_capped_lists():
    class Client:
        context_window = 4096

    assert window_budget(Client(), 1500, 200) == 2396 and window_budget(object(), 1500) is None
    items, cut = cap_items([f"walk past landmark {i} and keep going along the hallway" for i in range(50)], 60)
    assert cut and 1 <= len(items) < 50 and sum(text_bound(i) + 1 for i in items) <= 60
    assert cap_items(["turn left", "stop"], 60) == (["turn left", "stop"], False)
    with pytest.raises(ValueError, match="cut must be one of"):
        Section("History", "step 0", "newest")
