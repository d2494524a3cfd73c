"""A policy server for the remote-agent tests that runs WITHOUT vlnverse: only websockets,
msgpack and numpy, put on ``sys.path`` by ``--path`` (the tests start it with ``python -I -S``).

It speaks the openpi websocket policy protocol as an outside server would, and each
``--mode`` misbehaves in one way: ``ok`` (answers control frames; two steps forward, then
STOP), ``walk`` (acts on what it sees: forward, a turn when the depth ahead is under 0.8 m or
the picture's checksum says so, STOP at step 6), ``noctrl`` (an older
server: a control frame is an error text frame and a closed connection), ``slow``,
``close`` (closes at step 1), ``garbage`` (a reply that is not msgpack), ``outside`` (action
7 of 4), ``nan``, ``huge`` (a 100 MB reply), ``text`` (an error text frame), ``extra`` (one
reply too many, once, at step 1), ``noaction`` (once, a reply without an action at step 1),
``badend`` (answers ``episode_end`` with an action), ``silent`` (no reply from step 3 on).
``openpi`` behaves as an openpi policy server does: no control frames (the policy fails on
them: a traceback as a text frame, then a close), and each reply a chunk ``actions`` of
``--horizon`` future actions; ``openpi_bad`` puts action 7 second in each chunk. Prints
``listening PORT`` once it listens on 127.0.0.1, then ``connections N total M`` as each client
connects (N: the connections open at once; M: all so far).
"""

import argparse
import sys
import threading
import time
import traceback


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--path", required=True)
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each action reply")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--horizon", type=int, default=4, help="actions in an openpi chunk")
    args = parser.parse_args()
    sys.path.insert(0, args.path)
    try:
        import vlnverse  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("vlnverse must not be importable here")
    import msgpack
    import numpy as np
    from websockets.sync.server import serve

    def encode(obj):
        if isinstance(obj, np.ndarray):
            return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
        return obj

    def decode(obj):
        if b"__ndarray__" in obj:
            return np.ndarray(buffer=obj[b"data"], dtype=np.dtype(obj[b"dtype"]), shape=obj[b"shape"])
        return obj

    def check(connection, request):
        if args.api_key and request.headers.get("Authorization") != f"Api-Key {args.api_key}":
            return connection.respond(401, "bad key\n")
        return None

    lock, live, total, once = threading.Lock(), [0], [0], set()

    def first(what):
        """True the first time ``what`` is asked about in this server's life."""
        with lock:
            seen = what in once
            once.add(what)
        return not seen

    def handler(ws):
        with lock:
            live[0] += 1
            total[0] += 1
            print(f"connections {live[0]} total {total[0]}", flush=True)
        try:
            serve_one(ws)
        finally:
            with lock:
                live[0] -= 1

    def infer(obs):
        """An openpi-style policy: a chunk of future actions (forward twice from the start, then STOP)."""
        step, rgb = obs["step"], obs["rgb"]
        assert rgb.shape == (32, 48, 3)
        chunk = [[1.0] if step + i < 2 else [0.0] for i in range(args.horizon)]
        if args.mode == "openpi_bad":
            chunk[1] = [7.0]
        return {"actions": np.asarray(chunk, dtype=np.float32)}

    def serve_openpi(ws):
        for frame in ws:
            try:
                reply = infer(msgpack.unpackb(frame, object_hook=decode))
            except Exception:
                ws.send(traceback.format_exc())
                ws.close(1011, "Internal server error. Traceback included in previous frame.")
                return
            reply["server_timing"] = {"infer_ms": 1.0}
            ws.send(msgpack.packb(reply, default=encode))

    def serve_one(ws):
        ws.send(msgpack.packb({"action_space": "discrete", "image_size": [32, 48], "agent": "TestPolicy"}))
        if args.mode.startswith("openpi"):
            serve_openpi(ws)
            return
        for frame in ws:
            obs = msgpack.unpackb(frame, object_hook=decode)
            if obs.get("__ctrl__") == "episode_end" and args.mode == "badend":
                ws.send(msgpack.packb({"action": 1}))
                continue
            if "__ctrl__" in obs:
                if args.mode == "noctrl":
                    ws.send("KeyError: 'rgb'")
                    ws.close(1011, "internal error")
                    return
                ws.send(msgpack.packb({"__ctrl__": "ok"}))
                continue
            step = obs["step"]
            assert obs["rgb"].shape == (32, 48, 3) and obs["rgb"].dtype == np.uint8, obs["rgb"].shape
            assert obs["depth"].shape[:2] == (32, 48) and isinstance(obs["instruction"], str)
            time.sleep(args.delay)
            if args.mode == "slow":
                time.sleep(3.0)
            if args.mode == "silent" and step >= 3:
                time.sleep(30.0)
            if args.mode in ("extra", "noaction") and step == 1 and first(args.mode):
                ws.send(msgpack.packb({"action": 1} if args.mode == "extra" else {"server_timing": {}}))
                if args.mode == "noaction":
                    continue
            if args.mode == "close" and step == 1:
                ws.close(1011, "policy crashed")
                return
            if args.mode == "garbage":
                ws.send(b"\xc1 this is not msgpack")
            elif args.mode == "text":
                ws.send("RuntimeError: CUDA out of memory")
            elif args.mode == "huge":
                ws.send(b"\x00" * (100 * 1024 * 1024))
            elif args.mode == "silent":
                ws.send(msgpack.packb({"action": 1}))
            elif args.mode == "walk":
                ahead = float(obs["depth"][12:20, 20:28].min())
                turn = 2 if ahead < 0.08 else 3 if int(obs["rgb"].sum()) % 5 == 0 else 1
                ws.send(msgpack.packb({"action": turn if step < 6 else 0}))
            else:
                action = {"outside": 7, "nan": float("nan")}.get(args.mode, 1 if step < 2 else 0)
                ws.send(msgpack.packb({"action": np.asarray(action), "server_timing": {"infer_ms": 1.0}},
                                      default=encode))

    with serve(handler, "127.0.0.1", args.port, compression=None, max_size=None, process_request=check) as server:
        print(f"listening {server.socket.getsockname()[1]}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
