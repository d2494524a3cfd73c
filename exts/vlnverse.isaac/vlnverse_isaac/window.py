"""The "VLNVerse" window: widgets only; every action calls ``vlnverse.isaac_ui``."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import omni.ui as ui

logger = logging.getLogger(__name__)


class VLNVerseWindow:
    """Scene picker, scene-graph summary and keyboard teleoperation with recording."""

    def __init__(self, ext_path: str, settings: dict[str, str]) -> None:
        self._ext_path = Path(ext_path)
        self._settings = settings
        self._scenes = []
        self._session = None
        self._backend = None
        self._keys = None
        self._keyboard_sub = None
        self._update_sub = None
        self._window = ui.Window("VLNVerse", width=420, height=560, visible=False)
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
        self.stop_teleop()
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
                ui.Label("Teleoperate (W/A/S/D or arrows; pose logged every 50 ms)", style={"font_size": 18})
                with ui.HStack(height=24):
                    ui.Button("Start", clicked_fn=self.start_teleop)
                    ui.Button("Stop & save", clicked_fn=self.stop_teleop)
                self._status = ui.Label("", word_wrap=True)

    def _say(self, text: str) -> None:
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
        import omni.usd

        if omni.usd.get_context().open_stage(str(path)):
            self._say(f"opened {path}")
        else:
            self._say(f"could not open {path}")

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
        import omni.kit.app

        from vlnverse.isaac_ui.teleop import KeyboardTeleop, PoseRecorder, TeleopSession
        from vlnverse.scene import load_scene
        from vlnverse.scene.occupancy import build_occupancy
        from vlnverse.sim.agent import AgentSpec
        from vlnverse.sim.backends.isaac import IsaacBackend
        from vlnverse.sim.physics import PhysicsConfig
        from vlnverse.sim.types import Pose

        path = self._stage_path()
        if path is None or self._session is not None:
            self._say("open a scene file first" if path is None else "teleoperation is running")
            return
        scene = load_scene(path)
        agent = AgentSpec()
        low, high = scene.bounds
        start = build_occupancy(scene, agent_radius=agent.radius).nearest_navigable((low + high) / 2.0)
        physics = PhysicsConfig(mode=self._settings.get("physics_mode") or "strict")
        self._backend = IsaacBackend(physics)
        self._backend.load_scene(scene)
        self._backend.spawn_agent(agent, Pose(float(start[0]), float(start[1]), float(start[2]), 0.0))
        folder = Path(self._settings.get("recordings_folder") or Path.home() / "vlnverse_recordings")
        csv_path = folder / f"{scene.scene_id}-{time.strftime('%Y%m%d-%H%M%S')}.csv"
        self._keys = KeyboardTeleop()
        self._session = TeleopSession(self._backend, PoseRecorder(csv_path), self._keys, physics.control_dt)
        self._keyboard = omni.appwindow.get_default_app_window().get_keyboard()
        self._input = carb.input.acquire_input_interface()
        self._keyboard_sub = self._input.subscribe_to_keyboard_events(self._keyboard, self._on_key)
        self._update_sub = (
            omni.kit.app.get_app().get_update_event_stream().create_subscription_to_pop(self._on_update)
        )
        self._say(f"teleoperating in {scene.scene_id}; recording to {csv_path}")

    def _on_key(self, event, *_args) -> bool:
        import carb.input

        if self._keys is not None:
            if event.type == carb.input.KeyboardEventType.KEY_PRESS:
                self._keys.press(event.input.name)
            elif event.type == carb.input.KeyboardEventType.KEY_RELEASE:
                self._keys.release(event.input.name)
        return True

    def _on_update(self, _event) -> None:
        if self._session is None:
            return
        if self._keys.stop_requested:
            self.stop_teleop()
            return
        pose = self._session.tick()
        self._status.text = f"x {pose.x:.2f}  y {pose.y:.2f}  yaw {pose.yaw:.2f}  rows {self._session.recorder.rows}"

    def stop_teleop(self) -> None:
        if self._session is None:
            return
        self._update_sub = None
        if self._keyboard_sub is not None:
            self._input.unsubscribe_to_keyboard_events(self._keyboard, self._keyboard_sub)
            self._keyboard_sub = None
        path = self._session.finish()
        self._session = None
        self._backend.close()
        self._backend = None
        self._say(f"recording saved to {path}")
