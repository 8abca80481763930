"""A video of a browser test: Playwright's own recording where its ffmpeg is installed, else
Chromium's screencast frames (CDP) encoded by the ffmpeg that the imageio-ffmpeg wheel ships.

Playwright downloads its ffmpeg with its browsers; on a closed network that download fails, and
the screencast path still gives a video a person can watch.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


def playwright_ffmpeg() -> Path | None:
    """Playwright's own ffmpeg, if its browsers' download brought one."""
    root = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright")
    return next((p for p in sorted(root.glob("ffmpeg-*/ffmpeg-*")) if p.is_file() and os.access(p, os.X_OK)), None)


def ffmpeg() -> str:
    """An ffmpeg to encode and check videos with: the imageio-ffmpeg wheel's, else the system's."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        found = shutil.which("ffmpeg")
        if found is None:
            raise RuntimeError("No ffmpeg: install the test extras (imageio-ffmpeg) or Debian's ffmpeg.") from None
        return found


def duration_s(video: Path) -> float:
    """The video's length, after decoding every frame (a broken file raises)."""
    run = subprocess.run(
        [ffmpeg(), "-v", "error", "-stats", "-i", str(video), "-f", "null", "-"], capture_output=True, text=True, timeout=120
    )
    errors = [line for line in re.split(r"[\r\n]+", run.stderr) if line.strip() and "time=" not in line]
    if run.returncode != 0 or errors:
        raise RuntimeError(f"{video} does not decode: {' '.join(errors)[-500:] or run.stderr[-500:]}")
    times = re.findall(r"time=(\d+):(\d+):(\d+(?:\.\d+)?)", run.stderr)
    if not times:
        raise RuntimeError(f"ffmpeg read no frames from {video}: {run.stderr[-500:]}")
    hours, minutes, seconds = times[-1]
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


class Recorder:
    """Records one page of `browser` into `target` (.webm from Playwright, .mp4 from the screencast)."""

    def __init__(self, browser: Any, out: Path, **context_options: Any) -> None:
        self.out = out
        self.frames: list[tuple[float, bytes]] = []
        self.own = playwright_ffmpeg() is not None
        if self.own:
            self.context = browser.new_context(
                record_video_dir=str(out / "video-parts"), record_video_size=context_options.get("viewport"), **context_options
            )
            self.page = self.context.new_page()
        else:
            self.context = browser.new_context(**context_options)
            self.page = self.context.new_page()
            self.cdp = self.context.new_cdp_session(self.page)
            self.cdp.on("Page.screencastFrame", self._frame)
            self.cdp.send("Page.startScreencast", {"format": "jpeg", "quality": 80})
        self.started = time.monotonic()

    def _frame(self, event: dict[str, Any]) -> None:
        stamp = event.get("metadata", {}).get("timestamp") or time.time()
        self.frames.append((float(stamp), base64.b64decode(event["data"])))
        try:
            self.cdp.send("Page.screencastFrameAck", {"sessionId": event["sessionId"]})
        except Exception:
            pass  # the page is closing

    def stop(self) -> Path:
        """End the recording; the path of the video file."""
        elapsed = time.monotonic() - self.started
        if self.own:
            video = self.page.video
            self.context.close()
            target = self.out / "demo.webm"
            shutil.move(video.path(), target)
            shutil.rmtree(self.out / "video-parts", ignore_errors=True)
            return target
        self.cdp.send("Page.stopScreencast")
        self.context.close()
        return self._encode(elapsed)

    def _encode(self, elapsed: float) -> Path:
        if not self.frames:
            raise RuntimeError("Chromium sent no screencast frames.")
        frames_dir = self.out / "video-frames"
        shutil.rmtree(frames_dir, ignore_errors=True)
        frames_dir.mkdir()
        first = self.frames[0][0]
        end = first + max(elapsed, self.frames[-1][0] - first + 0.5)
        lines = []
        for index, (stamp, jpeg) in enumerate(self.frames):
            name = f"{index:05d}.jpg"
            (frames_dir / name).write_bytes(jpeg)
            following = self.frames[index + 1][0] if index + 1 < len(self.frames) else end
            lines += [f"file '{name}'", f"duration {max(following - stamp, 0.001):.3f}"]
        lines.append(f"file '{len(self.frames) - 1:05d}.jpg'")  # the concat demuxer's last entry
        (frames_dir / "frames.txt").write_text("\n".join(lines) + "\n")
        target = self.out / "demo.mp4"
        run = subprocess.run(
            [
                ffmpeg(),
                "-v",
                "error",
                "-y",
                "-f",
                "concat",
                "-safe",
                "0",
                "-i",
                str(frames_dir / "frames.txt"),
                "-vf",
                "scale=trunc(iw/2)*2:trunc(ih/2)*2,fps=25",
                "-c:v",
                "libx264",
                "-pix_fmt",
                "yuv420p",
                "-movflags",
                "+faststart",
                str(target),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        shutil.rmtree(frames_dir, ignore_errors=True)
        if run.returncode != 0:
            raise RuntimeError(f"ffmpeg could not encode the screencast: {run.stderr[-500:]}")
        return target
