"""The extension entry point: menu item, settings, window lifetime."""

from __future__ import annotations

import asyncio

import omni.ext

from .window import VLNVerseWindow

MENU_PATH = "Tools"
MENU_NAME = "VLNVerse"
SETTINGS_ROOT = "/exts/vlnverse.isaac"


def read_settings() -> dict[str, str]:
    """The extension's ``[settings]`` (see config/extension.toml)."""
    import carb.settings

    settings = carb.settings.get_settings()
    keys = ("scenes_folder", "corpus_folder", "dataset_path", "recordings_folder", "physics_mode")
    return {key: settings.get_as_string(f"{SETTINGS_ROOT}/{key}") or "" for key in keys}


class VLNVerseExtension(omni.ext.IExt):
    """Adds Tools → VLNVerse, which toggles the VLNVerse window."""

    def on_startup(self, ext_id: str) -> None:
        import omni.kit.app
        from omni.kit.menu.utils import MenuItemDescription, add_menu_items

        from vlnverse.sim.backends.isaac_kit import bind_kit_loop

        # The isaac backend runs its Kit work as coroutines on Kit's main loop (this thread's).
        bind_kit_loop(asyncio.get_event_loop())
        ext_path = omni.kit.app.get_app().get_extension_manager().get_extension_path(ext_id)
        self._window = VLNVerseWindow(ext_path, read_settings())
        self._menu_items = [MenuItemDescription(name=MENU_NAME, onclick_fn=self._toggle)]
        add_menu_items(self._menu_items, MENU_PATH)

    def _toggle(self, *_args) -> None:
        self._window.visible = not self._window.visible

    def on_shutdown(self) -> None:
        from omni.kit.menu.utils import remove_menu_items

        from vlnverse.sim.backends.isaac_kit import bind_kit_loop

        remove_menu_items(self._menu_items, MENU_PATH)
        self._menu_items = []
        if self._window is not None:
            self._window.destroy()
            self._window = None
        bind_kit_loop(None)
