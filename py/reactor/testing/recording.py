"""A video of a browser test: Playwright's own recording where its ffmpeg is installed, else
Chromium's screencast frames (CDP) encoded by the ffmpeg that the imageio-ffmpeg wheel ships.

Playwright downloads its ffmpeg with its browsers; on a closed network that download fails, and
the screencast path still gives a video a person can watch. `Demo` makes a README's video of a
scripted session: chapter titles and step captions drawn over the page, a screenshot per step,
the last frame held, and `demo.json` of the steps and their timings.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def playwright_ffmpeg() -> Path | None:
    """Playwright's own ffmpeg, if its browsers' download brought one."""
    root = Path(
        os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or Path.home() / ".cache" / "ms-playwright"
    )
    return next(
        (
            p
            for p in sorted(root.glob("ffmpeg-*/ffmpeg-*"))
            if p.is_file() and os.access(p, os.X_OK)
        ),
        None,
    )


def ffmpeg() -> str:
    """An ffmpeg to encode and check videos with: the imageio-ffmpeg wheel's, else the system's."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        found = shutil.which("ffmpeg")
        if found is None:
            raise RuntimeError(
                "No ffmpeg: install the test extras (imageio-ffmpeg) or Debian's ffmpeg."
            ) from None
        return found


def duration_s(video: Path) -> float:
    """The video's length, after decoding every frame (a broken file raises)."""
    run = subprocess.run(
        [ffmpeg(), "-v", "error", "-stats", "-i", str(video), "-f", "null", "-"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [
        line for line in re.split(r"[\r\n]+", run.stderr) if line.strip() and "time=" not in line
    ]
    if run.returncode != 0 or errors:
        raise RuntimeError(
            f"{video} does not decode: {' '.join(errors)[-500:] or run.stderr[-500:]}"
        )
    times = re.findall(r"time=(\d+):(\d+):(\d+(?:\.\d+)?)", run.stderr)
    if not times:
        raise RuntimeError(f"ffmpeg read no frames from {video}: {run.stderr[-500:]}")
    hours, minutes, seconds = times[-1]
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


class Recorder:
    """Records one page of `browser` into `target` (.webm from Playwright, .mp4 from the
    screencast)."""

    def __init__(
        self, browser: Any, out: Path, *, screencast: bool = False, **context_options: Any
    ) -> None:
        self.out = out
        self.frames: list[tuple[float, bytes]] = []
        self.holds: list[
            tuple[float, float]
        ] = []  # (when, seconds): the frame shown then lasts that much longer
        self.own = playwright_ffmpeg() is not None and not screencast
        if self.own:
            self.context = browser.new_context(
                record_video_dir=str(out / "video-parts"),
                record_video_size=context_options.get("viewport"),
                **context_options,
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
            held = sum(
                seconds
                for when, seconds in self.holds
                if stamp <= when < following or (when >= stamp and index + 1 == len(self.frames))
            )
            lines += [f"file '{name}'", f"duration {max(following - stamp, 0.001) + held:.3f}"]
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


# Draws a chapter's title card or a step's caption over the page, out of the page's way.
OVERLAY = """([kind, text]) => {
  let box = document.getElementById("reactor-demo-" + kind);
  if (!text) { box?.remove(); return; }
  if (!box) {
    box = document.createElement("div");
    box.id = "reactor-demo-" + kind;
    box.setAttribute("aria-hidden", "true");
    box.style.cssText = kind === "chapter"
      ? "position:fixed;inset:0;display:flex;align-items:center;justify-content:center;" +
        "background:rgba(15,23,42,.88);" +
        "color:#fff;font:600 44px system-ui,sans-serif;z-index:2147483647;pointer-events:none;" +
        "text-align:center;padding:2em"
      : "position:fixed;left:50%;bottom:24px;transform:translateX(-50%);max-width:80%;" +
        "background:rgba(15,23,42,.85);" +
        "color:#fff;font:500 22px system-ui,sans-serif;padding:.5em 1em;border-radius:10px;" +
        "z-index:2147483647;pointer-events:none";
    document.documentElement.append(box);
  }
  box.textContent = text;
  return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
}"""


class Demo:
    """A scripted session recorded for people to watch: `chapter(title)`, then `with step(caption):`
    around each thing done; `finish()` holds the last frame and writes the video, a screenshot per
    step and `demo.json`. Titles and captions are held in the video, not waited for in the test."""

    def __init__(
        self,
        browser: Any,
        out: Path,
        *,
        viewport: dict[str, int] | None = None,
        hold_s: float = 1.2,
    ) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for old in [
            *out.glob("[0-9][0-9]-*.png"),
            *(out / name for name in ("demo.json", "demo.mp4", "demo.webm")),
        ]:
            old.unlink(missing_ok=True)  # a previous recording's: this one's files only
        self.out, self.hold_s = out, hold_s
        self.recorder = Recorder(
            browser, out, screencast=True, viewport=viewport or {"width": 1400, "height": 900}
        )
        self.page = self.recorder.page
        self.steps: list[dict[str, Any]] = []
        self.current_chapter = ""
        self.started = time.time()

    def chapter(self, title: str) -> None:
        """A title card over the whole page, held in the video, then gone."""
        self.current_chapter = title
        self.page.evaluate(OVERLAY, ["chapter", title])
        self.recorder.holds.append((time.time(), self.hold_s * 1.5))
        self.page.evaluate(OVERLAY, ["chapter", ""])

    @contextmanager
    def step(self, caption: str) -> Iterator[None]:
        """Caption what the block does; after it, a screenshot, and the result held in the video."""
        self.page.evaluate(OVERLAY, ["caption", caption])
        began = time.time()
        yield
        number = len(self.steps) + 1
        shot = f"{number:02d}-{re.sub(r'[^a-z0-9]+', '-', caption.lower())[:48].strip('-')}.png"
        self.page.evaluate(
            "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        self.page.screenshot(path=self.out / shot)
        self.recorder.holds.append((time.time(), self.hold_s))
        self.steps.append(
            {
                "chapter": self.current_chapter,
                "caption": caption,
                "screenshot": shot,
                "started_s": round(began - self.started, 3),
                "seconds": round(time.time() - began, 3),
            }
        )

    def finish(self) -> Path:
        """Hold the last frame, write the video and demo.json; the video's path."""
        self.page.evaluate(OVERLAY, ["caption", ""])
        self.recorder.holds.append((time.time(), self.hold_s * 2))
        video = self.recorder.stop()
        summary = {"video": video.name, "seconds": round(duration_s(video), 2), "steps": self.steps}
        (self.out / "demo.json").write_text(
            json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
        )
        return video
