"""Export speed of `teledora log export --format lerobot`: seconds of recording per second.

Writes one synthetic teleop run (tests/recording/teleop_run.py: joint states at
90 Hz, commands at 30-50 Hz, cameras with camera-like content and noise) and
exports it again and again into fresh datasets with each video encoder,
alternating encoders round by round so machine load hits both alike. Prints,
per encoder, the median and worst export rate in dataset frames per second
(one frame = one row, every camera's image included) and the ratio of the
medians, and the time split (everything but video vs. total) of one export.

    python benchmarks/lerobot_export.py [--seconds 10] [--cameras 2] [--camera-hz 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from teledora.operators.datasets.lerobot_features import Units  # noqa: E402
from teledora.recording.lerobot_export import ExportOptions, export_run  # noqa: E402
from tests.recording.teleop_run import write_teleop_run  # noqa: E402

CAMERA_NAMES = ("chest", "top_front", "top_back", "left_wrist", "right_wrist")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="recording length")
    ap.add_argument("--cameras", type=int, default=2, help="how many 640x480 cameras (1-5)")
    ap.add_argument("--camera-hz", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--codecs", default="libsvtav1,libx264")
    args = ap.parse_args()
    codecs = args.codecs.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run = write_teleop_run(tmp / "run", duration_s=args.seconds, cameras=CAMERA_NAMES[: args.cameras],
                               size=(640, 480), camera_hz=args.camera_hz, texture=True)
        rates: dict[str, list[float]] = {c: [] for c in codecs}
        for r in range(args.rounds):
            for codec in codecs[r % len(codecs):] + codecs[: r % len(codecs)]:
                opts = ExportOptions(fps=30, default_task="bench", robot_type="alohamini2", units=Units(0.7),
                                     lift_travel_mm=600.0, vcodec=codec)
                root = tmp / f"ds-{codec}-{r}"
                t0 = time.perf_counter()
                report = export_run(run, root, opts, append=False)
                dt = time.perf_counter() - t0
                rates[codec].append(report.frames / dt)
                size_mb = sum(p.stat().st_size for p in (root / "videos").rglob("*.mp4")) / 1e6
                print(f"round {r} {codec:<10} {report.frames} frames in {dt:6.2f} s = {report.frames / dt:6.1f} frames/s "
                      f"({report.frames / 30 / dt:4.2f} s of recording per s); video {size_mb:.1f} MB")
                shutil.rmtree(root)
        # the part that is not video: the same export without cameras
        run_nocam = write_teleop_run(tmp / "run-nocam", duration_s=args.seconds, cameras=())
        t0 = time.perf_counter()
        report = export_run(run_nocam, tmp / "ds-nocam", opts, append=False)
        dt = time.perf_counter() - t0
    print()
    print(f"{args.seconds:g} s recording, {args.cameras} camera(s) 640x480 at {args.camera_hz:g} Hz, 30 fps dataset")
    med = {c: statistics.median(v) for c, v in rates.items()}
    for codec in codecs:
        print(f"  {codec:<10} median {med[codec]:6.1f} frames/s  worst {min(rates[codec]):6.1f} frames/s  "
              f"= {med[codec] / 30:5.2f} s of recording per second")
    if len(codecs) == 2:
        print(f"  ratio {codecs[1]}/{codecs[0]} (medians): {med[codecs[1]] / med[codecs[0]]:.2f}")
    print(f"  without cameras: {report.frames / dt:.0f} frames/s ({report.frames} frames in {dt:.2f} s)")


if __name__ == "__main__":
    main()
