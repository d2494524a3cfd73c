"""A small USD stage authored per the project's USD contract, for tests that need a scene file."""


def write_room_usd(path):
    """A one-room stage authored per the project's USD contract, with a labelled table."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdSemantics, Vt

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    room = UsdGeom.Xform.Define(stage, "/World/Rooms/room_0")
    room.GetPrim().CreateAttribute("vlnverse:roomType", Sdf.ValueTypeNames.String).Set("living_room")

    def box(prim_path, lo, hi, color):
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        mesh = UsdGeom.Mesh.Define(stage, prim_path)
        mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in [
            (x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
            (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)]]))
        mesh.CreateFaceVertexCountsAttr([4] * 6)
        mesh.CreateFaceVertexIndicesAttr([0, 3, 2, 1, 4, 5, 6, 7, 0, 1, 5, 4, 1, 2, 6, 5, 2, 3, 7, 6, 3, 0, 4, 7])
        mesh.CreateSubdivisionSchemeAttr("none")
        mesh.CreateDisplayColorAttr([Gf.Vec3f(*color)])
        UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())

    box("/World/Rooms/room_0/Floor", (0, 0, -0.1), (5, 4, 0), (0.45, 0.3, 0.18))
    UsdGeom.Xform.Define(stage, "/World/Rooms/room_0/Walls")
    for i, (lo, hi) in enumerate([((-0.1, 0, 0), (0, 4, 2.5)), ((5, 0, 0), (5.1, 4, 2.5)),
                                  ((0, -0.1, 0), (5, 0, 2.5)), ((0, 4, 0), (5, 4.1, 2.5))]):
        box(f"/World/Rooms/room_0/Walls/Wall_{i}", lo, hi, (0.8, 0.8, 0.75))
    table = UsdGeom.Xform.Define(stage, "/World/Rooms/room_0/Objects/table_0").GetPrim()
    UsdSemantics.LabelsAPI.Apply(table, "class").CreateLabelsAttr(["table"])
    box("/World/Rooms/room_0/Objects/table_0/Top", (3.0, 1.5, 0.0), (4.0, 2.5, 1.5), (0.6, 0.35, 0.15))
    stage.GetRootLayer().Save()
    return path
