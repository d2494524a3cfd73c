"""The "VLNVerse" window: widgets only; every action calls ``vlnverse.isaac_ui``.

Kit owns the frame loop here (``isaacsim.core.api``'s synchronous ``reset``/``step`` and
``rep.orchestrator.step`` are not for extensions), so agent runs and teleoperation drive
the isaac backend from worker threads (its Kit work is scheduled on Kit's loop) and the
window follows them from coroutines that await one Kit frame at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import omni.ui as ui

logger = logging.getLogger(__name__)


class VLNVerseWindow:
    """Scene picker, scene-graph summary, episode browser, agent runs, teleop + recording."""

    def __init__(self, ext_path: str, settings: dict[str, str]) -> None:
        self._ext_path = Path(ext_path)
        self._settings = settings
        self._scenes = []
        self._teleop = None
        self._keys = None
        self._keyboard_sub = None
        self._browser = None
        self._rows = []
        self._episode = None
        self._run = None
        self._last_recording = None
        self._destroyed = False
        self._window = ui.Window("VLNVerse", width=460, height=720, visible=False)
        self._build()
        self.refresh_scenes()

    # -- window plumbing ---------------------------------------------------------------

    @property
    def visible(self) -> bool:
        return self._window.visible

    @visible.setter
    def visible(self, value: bool) -> None:
        self._window.visible = value

    def destroy(self) -> None:
        """Ask any run or teleoperation to stop (their threads release the backend) and close."""
        self.stop_teleop()
        self.stop_run()
        self._destroyed = True
        self._window.destroy()

    def _build(self) -> None:
        with self._window.frame:
            with ui.VStack(spacing=6, height=0):
                ui.Label("Scene", style={"font_size": 18})
                with ui.HStack(height=24):
                    self._scene_combo = ui.ComboBox(0)
                    ui.Button("Refresh", width=70, clicked_fn=self.refresh_scenes)
                    ui.Button("Open", width=60, clicked_fn=self.open_selected)
                with ui.HStack(height=24):
                    self._file_field = ui.StringField()
                    ui.Button("Open file", width=80, clicked_fn=self.open_file)
                ui.Button("Scene graph", height=24, clicked_fn=self.show_summary)
                ui.Label("Episodes", style={"font_size": 18})
                with ui.HStack(height=24):
                    self._dataset_field = ui.StringField()
                    self._dataset_field.model.set_value(self._settings.get("dataset_path") or "")
                    ui.Button("Load", width=60, clicked_fn=self.load_episodes)
                with ui.HStack(height=24):
                    self._episode_combo = ui.ComboBox(0)
                    ui.Button("Show", width=60, clicked_fn=self.show_episode)
                ui.Label("Run agent", style={"font_size": 18})
                with ui.HStack(height=24):
                    ui.Label("agent", width=40)
                    self._agent_field = ui.StringField()
                    self._agent_field.model.set_value("oracle")
                    ui.Label("physics", width=50)
                    self._physics_field = ui.StringField(width=70)
                    self._physics_field.model.set_value(self._settings.get("physics_mode") or "strict")
                with ui.HStack(height=24):
                    ui.Button("Run", clicked_fn=self.start_run)
                    ui.Button("Stop", clicked_fn=self.stop_run)
                    ui.Button("Score last recording", clicked_fn=self.score_recording)
                self._metrics = ui.Label("", word_wrap=True)
                ui.Label("Teleoperate (W/A/S/D or arrows; pose logged every 50 ms)", style={"font_size": 18})
                with ui.HStack(height=24):
                    ui.Button("Start", clicked_fn=self.start_teleop)
                    ui.Button("Stop & save", clicked_fn=self.stop_teleop)
                self._status = ui.Label("", word_wrap=True)

    def _say(self, text: str) -> None:
        if not self._destroyed:
            self._status.text = text
        logger.info(text)

    # -- scenes ------------------------------------------------------------------------

    def _bundled_folder(self) -> Path:
        from vlnverse.isaac_ui.scenes import bundled_scene_dir

        if self._settings.get("scenes_folder"):
            return Path(self._settings["scenes_folder"])
        packaged = self._ext_path / "data" / "scenes"
        return packaged if packaged.is_dir() else bundled_scene_dir()

    def refresh_scenes(self) -> None:
        from vlnverse.isaac_ui.scenes import list_scenes

        corpus = [self._settings["corpus_folder"]] if self._settings.get("corpus_folder") else []
        self._scenes = list_scenes(self._bundled_folder(), corpus)
        model = self._scene_combo.model
        for item in model.get_item_children():
            model.remove_item(item)
        for entry in self._scenes:
            model.append_child_item(None, ui.SimpleStringModel(f"[{entry.source}] {entry.name}"))
        self._say(f"{len(self._scenes)} scenes found")

    def _open(self, path: Path) -> None:
        asyncio.ensure_future(self._open_async(path))

    async def _open_async(self, path: Path) -> None:
        import omni.usd

        if self._teleop is not None or self._run is not None:
            self._say("stop the agent run or teleoperation first")
            return
        result, error = await omni.usd.get_context().open_stage_async(str(path))
        self._say(f"opened {path}" if result else f"could not open {path}: {error}")

    def open_selected(self) -> None:
        index = self._scene_combo.model.get_item_value_model().as_int
        if 0 <= index < len(self._scenes):
            self._open(self._scenes[index].path)

    def open_file(self) -> None:
        from vlnverse.errors import VLNVerseError
        from vlnverse.isaac_ui.scenes import scene_entry_for_file

        try:
            self._open(scene_entry_for_file(self._file_field.model.get_value_as_string()).path)
        except VLNVerseError as exc:
            self._say(str(exc))

    def _stage_path(self) -> Path | None:
        import omni.usd

        stage = omni.usd.get_context().get_stage()
        identifier = stage.GetRootLayer().realPath if stage else ""
        return Path(identifier) if identifier else None

    def show_summary(self) -> None:
        from vlnverse.errors import VLNVerseError
        from vlnverse.isaac_ui.summary import summarize_scene

        path = self._stage_path()
        if path is None:
            self._say("open a scene file first")
            return
        try:
            self._say(summarize_scene(path).render())
        except VLNVerseError as exc:
            self._say(f"cannot summarize {path.name}: {exc}")

    # -- teleoperation -----------------------------------------------------------------

    def start_teleop(self) -> None:
        import carb.input
        import omni.appwindow

        from vlnverse.isaac_ui.teleop import KeyboardTeleop, PoseRecorder, TeleopLoop, TeleopSession
        from vlnverse.scene import load_scene
        from vlnverse.scene.occupancy import build_occupancy
        from vlnverse.sim.agent import AgentSpec
        from vlnverse.sim.backends.isaac import IsaacBackend
        from vlnverse.sim.physics import PhysicsConfig
        from vlnverse.sim.types import Pose

        path = self._stage_path()
        if path is None or self._teleop is not None:
            self._say("open a scene file first" if path is None else "teleoperation is running")
            return
        if self._run is not None:
            self._say("stop the agent run first")
            return
        scene = load_scene(path)
        agent = AgentSpec()
        if self._episode is not None:  # start where the selected episode starts
            start, yaw = self._episode.start_position, self._episode.start_yaw
        else:
            low, high = scene.bounds
            start = build_occupancy(scene, agent_radius=agent.radius).nearest_navigable((low + high) / 2.0)
            yaw = 0.0
        physics = PhysicsConfig(mode=self._physics_field.model.get_value_as_string() or "strict")
        folder = Path(self._settings.get("recordings_folder") or Path.home() / "vlnverse_recordings")
        name = self._episode.episode_id if self._episode is not None else scene.scene_id
        csv_path = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.csv"
        keys = self._keys = KeyboardTeleop()

        def build():  # on the teleop thread: the backend hands its Kit work to Kit's loop
            backend = IsaacBackend(physics)
            try:
                backend.load_scene(scene)
                backend.spawn_agent(agent, Pose(float(start[0]), float(start[1]), float(start[2]), float(yaw)))
                return backend, TeleopSession(backend, PoseRecorder(csv_path), keys, physics.control_dt)
            except BaseException:
                backend.close()
                raise

        self._teleop = TeleopLoop(build, physics.control_dt)
        self._keyboard = omni.appwindow.get_default_app_window().get_keyboard()
        self._input = carb.input.acquire_input_interface()
        self._keyboard_sub = self._input.subscribe_to_keyboard_events(self._keyboard, self._on_key)
        asyncio.ensure_future(self._follow_teleop(self._teleop))
        self._say(f"teleoperating in {scene.scene_id}; recording to {csv_path}")

    def _on_key(self, event, *_args) -> bool:
        import carb.input

        if self._keys is not None:
            if event.type == carb.input.KeyboardEventType.KEY_PRESS:
                self._keys.press(event.input.name)
            elif event.type == carb.input.KeyboardEventType.KEY_RELEASE:
                self._keys.release(event.input.name)
        return True

    async def _follow_teleop(self, loop) -> None:
        """Show the pose each Kit frame until the teleop thread ends, then clean up."""
        import omni.kit.app

        app = omni.kit.app.get_app()
        while not loop.done:
            await app.next_update_async()
            if self._keys is not None and self._keys.stop_requested:
                loop.stop()
            pose = loop.pose
            if pose is not None and not self._destroyed:
                self._status.text = f"x {pose.x:.2f}  y {pose.y:.2f}  yaw {pose.yaw:.2f}  rows {loop.rows}"
        if self._keyboard_sub is not None:
            self._input.unsubscribe_to_keyboard_events(self._keyboard, self._keyboard_sub)
            self._keyboard_sub = None
        self._teleop = self._keys = None
        self._last_recording = loop.recording
        self._say(f"teleoperation failed: {loop.error}" if loop.error else f"recording saved to {loop.recording}")

    def stop_teleop(self) -> None:
        """Ask the teleop thread to stop; :meth:`_follow_teleop` finishes up."""
        if self._teleop is not None:
            self._teleop.stop()

    # -- episodes ----------------------------------------------------------------------

    def load_episodes(self) -> None:
        from vlnverse.errors import VLNVerseError
        from vlnverse.isaac_ui.episodes import EpisodeBrowser

        path = self._stage_path()
        dataset = self._dataset_field.model.get_value_as_string().strip()
        if path is None or not dataset:
            self._say("open a scene and enter a dataset folder first")
            return
        try:
            self._browser = EpisodeBrowser(dataset)
            self._rows = self._browser.rows(path)
        except VLNVerseError as exc:
            self._say(str(exc))
            return
        model = self._episode_combo.model
        for item in model.get_item_children():
            model.remove_item(item)
        for row in self._rows:
            model.append_child_item(None, ui.SimpleStringModel(row.label()))
        self._say(f"{len(self._rows)} episodes of {path.parent.name}/{path.name} in {dataset}")

    def _selected_episode(self):
        index = self._episode_combo.model.get_item_value_model().as_int
        if self._browser is None or not 0 <= index < len(self._rows):
            return None
        return self._browser.episode(self._rows[index].episode_id)

    def show_episode(self) -> None:
        import omni.usd
        from pxr import Usd

        from vlnverse.isaac_ui.episodes import describe_episode, episode_markers
        from vlnverse.isaac_ui.markers import draw_episode

        self._episode = self._selected_episode()
        if self._episode is None:
            self._say("load the episodes and pick one first")
            return
        stage = omni.usd.get_context().get_stage()
        with Usd.EditContext(stage, stage.GetSessionLayer()):  # never edits the scene file
            draw_episode(stage, episode_markers(self._episode))
        self._say(describe_episode(self._episode))

    # -- agent runs --------------------------------------------------------------------

    def start_run(self, agent: str | None = None, agent_config: dict | None = None) -> None:
        from vlnverse.errors import VLNVerseError
        from vlnverse.isaac_ui.agent_run import open_agent_run

        path = self._stage_path()
        self._episode = self._selected_episode() or self._episode
        if path is None or self._episode is None or self._run is not None or self._teleop is not None:
            self._say("open a scene, load its episodes and pick one (and stop any run or teleop) first")
            return
        name = agent or self._agent_field.model.get_value_as_string().strip() or "oracle"
        try:
            self._run = open_agent_run(path, self._episode, name, agent_config, backend="isaac",
                                       physics=self._physics_field.model.get_value_as_string() or "strict",
                                       env_in_thread=True)
        except VLNVerseError as exc:
            self._say(f"cannot run {name}: {exc}")
            return
        asyncio.ensure_future(self._follow_run(self._run))
        self._say(f"running {name} on {self._episode.episode_id}")

    async def _follow_run(self, run) -> None:
        """Show the live metrics each Kit frame until the run's thread ends."""
        import omni.kit.app

        app = omni.kit.app.get_app()
        while not run.done:
            await app.next_update_async()
            live = run.tick(timeout=0)
            if not self._destroyed:
                self._metrics.text = live.render()
        self._run = None
        run.close()
        if not self._destroyed:
            self._metrics.text = run.live().render()

    def stop_run(self) -> None:
        """Ask the run to stop at its next step; :meth:`_follow_run` finishes up."""
        if self._run is not None:
            self._run.stop()

    def score_recording(self) -> None:
        import tempfile

        from vlnverse.errors import VLNVerseError
        from vlnverse.isaac_ui.agent_run import replay_agent_config

        if self._last_recording is None or self._episode is None:
            self._say("record a teleoperation of the selected episode first")
            return
        try:
            config = replay_agent_config(self._last_recording, self._episode.episode_id, tempfile.mkdtemp())
        except VLNVerseError as exc:
            self._say(str(exc))
            return
        self.start_run("replay", config)
