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

    async def test_backend_runs_from_a_worker_thread_while_kit_keeps_its_loop(self):
        """Item 1 of issue 21: inside the app the backend's Kit work runs as coroutines on
        Kit's loop (bound by the extension), requested from a worker thread."""
        import asyncio
        from pathlib import Path

        import numpy as np

        from vlnverse.isaac_ui.scenes import bundled_scene_dir, scan_folder
        from vlnverse.scene import load_scene
        from vlnverse.scene.occupancy import build_occupancy
        from vlnverse.sim.agent import AgentSpec
        from vlnverse.sim.backends.isaac import IsaacBackend
        from vlnverse.sim.physics import PhysicsConfig
        from vlnverse.sim.types import CameraRequest, Pose

        manager = omni.kit.app.get_app().get_extension_manager()
        ext_path = manager.get_extension_path_by_module(__name__)
        packaged = Path(ext_path) / "data" / "scenes"
        entries = scan_folder(packaged if packaged.is_dir() else bundled_scene_dir(), "bundled", recursive=True)
        self.assertGreater(len(entries), 0)
        scene = load_scene(entries[0].path)
        agent = AgentSpec()
        low, high = scene.bounds
        x, y, z = build_occupancy(scene, agent_radius=agent.radius).nearest_navigable((low + high) / 2.0)

        def work():
            backend = IsaacBackend(PhysicsConfig(mode="slide"))
            try:
                backend.load_scene(scene)
                backend.spawn_agent(agent, Pose(float(x), float(y), float(z), 0.0))
                moved = backend.move(np.zeros((5, 3)))
                request = CameraRequest((float(x), float(y), float(z) + 1.25), 0.0, 0.0, 64, 48, 90.0, 0.05, 20.0,
                                        rgb=True, depth=True)
                return moved, backend.render([request])[0], backend.contacts()
            finally:
                backend.close()

        moved, frame, contacts = await asyncio.get_event_loop().run_in_executor(None, work)
        self.assertEqual(moved.poses.shape, (5, 3))
        self.assertEqual(frame.rgb.shape, (48, 64, 3))
        self.assertTrue(np.isfinite(frame.depth).all())
        self.assertIsInstance(contacts, list)

