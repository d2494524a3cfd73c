"""The window opens from the menu and lists the bundled scenes (runs inside Kit)."""

import omni.kit.app
import omni.kit.test


class TestVLNVerseWindow(omni.kit.test.AsyncTestCase):
    async def test_window_lists_scenes_and_opens_one(self):
        import omni.usd

        from vlnverse_isaac.window import VLNVerseWindow

        manager = omni.kit.app.get_app().get_extension_manager()
        ext_path = manager.get_extension_path_by_module(__name__)
        window = VLNVerseWindow(ext_path, {"scenes_folder": "", "corpus_folder": ""})
        try:
            window.visible = True
            await omni.kit.app.get_app().next_update_async()
            self.assertGreater(len(window._scenes), 0)
            window.open_selected()  # opens with open_stage_async, a few frames later
            wanted = str(window._scenes[0].path)
            for _ in range(300):
                await omni.kit.app.get_app().next_update_async()
                stage = omni.usd.get_context().get_stage()
                if stage is not None and stage.GetRootLayer().realPath == wanted:
                    break
            self.assertEqual(stage.GetRootLayer().realPath, wanted)
        finally:
            window.destroy()
