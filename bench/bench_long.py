"""A long session: does a turn cost more on turn 600 than on turn 1?

The scripted model of `bench_loop` (one `read_file` per turn, through the session `agentcli run`
builds) runs a 600-turn task. On each request it also builds the JSON body a transport posts
(`request_body`, which encodes each message once and keeps it), timed apart, and, for
comparison, the same body encoded whole (`json.dumps` of `build_request_params`, as an SDK
does on every request). The body has to grow with the history, since every request carries
it. Everything else agentcli does between two model calls (journaling, permissions, the tool,
context bookkeeping, choosing what to send) should not.

Reported, for the first and the last 50 turns: the median time between an answer and the next
request (without the body), and the medians of the two ways to build the body.
Target: the loop's own cost on the last turns ≤ 1.3× the first turns'.
"""

from __future__ import annotations

import json
import statistics
import time

from agentcli.events import EventSink
from agentcli.model import ModelRequest, ModelResponse
from agentcli.model.request import build_request_params, request_body
from bench.bench_loop import ReadEveryFile, isolated_home, make_workspace, run_session

TURNS = 600
WINDOW = 50


class ReadAndBuildBodies(ReadEveryFile):
    """`ReadEveryFile`, also building each request's body as the transport would."""

    def __init__(self, turns: int) -> None:
        super().__init__(turns)
        self.build_s: list[float] = []
        self.encode_s: list[float] = []
        self.left: list[float] = []

    async def complete(self, request: ModelRequest, on_event: EventSink) -> ModelResponse:
        arrived = time.process_time()
        request_body(self.model, request)
        built = time.process_time()
        json.dumps(build_request_params(self.model, request), ensure_ascii=False)
        encoded = time.process_time()
        self.build_s.append(built - arrived)
        self.encode_s.append(encoded - built)
        self.arrivals.append(arrived)
        response = self._responses[len(self.arrivals) - 1]
        self.left.append(time.process_time())
        return response


def measure(turns: int = TURNS) -> dict[str, tuple[float, float]]:
    """(first window, last window) medians in ms, by part."""
    with isolated_home() as home:
        model = ReadAndBuildBodies(turns)
        run_session(make_workspace(home, turns), model)
    loop = [
        (arrived - left) * 1000
        for left, arrived in zip(model.left, model.arrivals[1:], strict=False)
    ]
    parts = {
        "loop": loop,
        "body": [s * 1000 for s in model.build_s[1:]],
        "json": [s * 1000 for s in model.encode_s[1:]],
    }
    return {
        name: (statistics.median(v[:WINDOW]), statistics.median(v[-WINDOW:]))
        for name, v in parts.items()
    }


def run() -> list[tuple[str, str]]:
    measure(30)  # warm-up: imports, schema generation, SQLite page cache
    result = measure()
    rows = []
    labels = {
        "loop": "agentcli between answer and request (target ≤ 1.3x)",
        "body": "request body as posted (request_body, bytes)",
        "json": "request body encoded whole (json.dumps of the params)",
    }
    for name, label in labels.items():
        first, last = result[name]
        rows.append(
            (
                f"{TURNS}-turn session: {label}",
                f"turns 1-{WINDOW} {first:.2f} ms, last {WINDOW} {last:.2f} ms "
                f"({last / first:.2f}x)",
            )
        )
    return rows


if __name__ == "__main__":
    for what, value in run():
        print(f"{what:75} {value}")
