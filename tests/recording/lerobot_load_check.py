"""Run with LeRobot's own Python: load a dataset with LeRobotDataset and print
what it holds as JSON (for tests/recording/test_lerobot_consumer.py).

Usage: python lerobot_load_check.py REPO_ID ROOT INDEX[,INDEX...]
"""

import json
import sys

from lerobot.datasets.lerobot_dataset import CODEBASE_VERSION, LeRobotDataset


def main() -> None:
    repo_id, root, indices = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split(",")]
    ds = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    out = {
        "codebase_version": CODEBASE_VERSION,
        "num_frames": ds.num_frames,
        "num_episodes": ds.num_episodes,
        "fps": ds.fps,
        "camera_keys": ds.meta.camera_keys,
        "tasks": list(ds.meta.tasks.index),
        "episode_lengths": [int(ds.meta.episodes[i]["length"]) for i in range(ds.num_episodes)],
        "state_names": ds.features["observation.state"]["names"],
        "stats_keys": sorted(ds.meta.stats),
        "items": {},
    }
    for i in indices:
        item = ds[i]
        entry = {
            "timestamp": float(item["timestamp"]),
            "frame_index": int(item["frame_index"]),
            "episode_index": int(item["episode_index"]),
            "task": item["task"],
            "state": item["observation.state"].tolist(),
            "action": item["action"].tolist(),
            "state_shape": list(item["observation.state"].shape),
            "action_shape": list(item["action"].shape),
        }
        for key in ds.meta.camera_keys:
            img = item[key]  # (C, H, W) float in [0, 1]
            entry[key] = {"shape": list(img.shape), "mean_rgb": (img.mean(dim=(1, 2)) * 255).tolist()}
        out["items"][str(i)] = entry
    print(json.dumps(out))


if __name__ == "__main__":
    main()
