"""Lanes: the device memory one stream's launches may share, and no other stream's.

A Stream-K launch writes partial tiles to a workspace, raises flags, counts arrivals and bumps
an epoch; two launches that shared any of it while running at once would read each other's
partials or flags. Launches on one stream never run at once, so each stream gets its own
``Lane``: an epoch/done word, flags, counters, workspace and the packed-operand copies, each
grown (never shrunk) to the largest launch seen on that stream. A launch captured into a CUDA
graph gets a private lane of its exact size, kept as long as the process (the graph may be
replayed on any stream at any time; launches of one capture sequence on one stream share it while
it fits, as they run in order). Memory no launch can still use is freed: a grown lane's old
buffers once the stream has passed an event recorded at the growth.

Launches whose waits need CTAs that are not yet resident (``waits_only_backward`` is false:
e.g. owner-waits Stream-K) are also ordered against each other device-wide, through one event:
two such launches sharing the SMs could each hold slots the other's missing CTAs need.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .device import Buffer, Device, driver
from .errors import check

MAX_LANES = 64  # eager lanes kept per device; the least recently used beyond it is retired


@dataclass(frozen=True, slots=True)
class Needs:
    """Bytes (flags and counters: entries) one launch needs from its lane."""

    workspace: int = 0
    flags: int = 0
    counters: int = 0
    pack_a: int = 0
    pack_b: int = 0
    host_a: int = 0
    host_b: int = 0
    host_c: int = 0


ZEROED = ("flags", "counters")  # a fresh flag or counter must never equal a live epoch


class Lane:
    """One stream's buffers (``ptr(name)``), epoch word and an event to retire old buffers by."""

    def __init__(self, dev: Device, stream: int, needs: Needs | None = None, keep: object = None) -> None:
        self.dev, self.stream = dev, stream
        self.keep = keep  # the stream's owner (a CuPy Stream), so the handle stays valid while the lane lives
        self.state = dev.alloc(8)
        with dev.setup() as s:  # epoch 1, done 0 (schedule_table.cuh StateWord)
            check(driver().cuMemsetD32Async(self.state.ptr, 1, 1, s), "cuMemsetD32Async(epoch)")
            check(driver().cuMemsetD32Async(self.state.ptr + 4, 0, 1, s), "cuMemsetD32Async(done)")
        self.buffers: dict[str, Buffer] = {}
        self.retired: list[tuple[object, list[Buffer]]] = []  # (event, buffers it frees)
        self.have = Needs()
        self.generation = 0  # bumped when a buffer is replaced: parameter blocks re-read the pointers
        if needs is not None:
            self.grow(needs, exact=True)

    def fits(self, needs: Needs) -> bool:
        have = self.have
        return (needs.workspace <= have.workspace and needs.flags <= have.flags and needs.counters <= have.counters
                and needs.pack_a <= have.pack_a and needs.pack_b <= have.pack_b and needs.host_a <= have.host_a
                and needs.host_b <= have.host_b and needs.host_c <= have.host_c)

    def grow(self, needs: Needs, *, exact: bool = False) -> None:
        """Replace every buffer smaller than ``needs`` (at least doubling, unless ``exact``); the
        old ones are freed once this stream has passed the launches that may use them."""
        drv = driver()
        old, sizes = [], {}
        for name in Needs.__slots__:
            want, have = getattr(needs, name), getattr(self.have, name)
            sizes[name] = have
            if want > have:
                size = want if exact else max(want, 2 * have)
                sizes[name] = size
                unit = 4 if name == "flags" else 8 if name == "counters" else 1
                if name in self.buffers:
                    old.append(self.buffers[name])
                self.buffers[name] = self.dev.alloc(size * unit, zero=name in ZEROED)
        if old:
            event = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
            check(drv.cuEventRecord(event, self.stream), "cuEventRecord(retire)")
            self.retired.append((event, old))
        self.have = Needs(**sizes)
        self.generation += 1
        self.reap()

    def reap(self) -> None:
        """Free retired buffers whose launches are done (never waits)."""
        drv = driver()
        keep = []
        for event, buffers in self.retired:
            err, = drv.cuEventQuery(event)
            if int(err) == 0:
                drv.cuEventDestroy(event)
                with self.dev.setup():
                    buffers.clear()
            else:
                keep.append((event, buffers))
        self.retired = keep

    def ptr(self, name: str) -> int:
        buf = self.buffers.get(name)
        return buf.ptr if buf is not None else 0

    @property
    def nbytes(self) -> int:
        return 8 + sum(b.nbytes for b in self.buffers.values())


class Lanes:
    """A device's lanes: one per stream seen (least recently used first), and the private lanes
    of captured launches."""

    def __init__(self, dev: Device) -> None:
        drv = driver()
        self.dev = dev
        self.by_stream: OrderedDict[int, Lane] = OrderedDict()
        self.captured: dict[tuple[int, int], list[Lane]] = {}  # (capture id, stream) -> its lanes
        self.coresident = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")

    def for_launch(self, stream: int, needs: Needs, capture: int | None, keep: object = None) -> Lane:
        """The lane a launch on ``stream`` uses; ``capture``: the id of the capture sequence the
        stream is in, or None; ``keep``: the object owning the stream, held while the lane lives,
        since later synchronizations call the driver with the handle (a destroyed one can crash it)."""
        if capture is not None:
            lanes = self.captured.setdefault((capture, stream), [])
            if not lanes or not lanes[-1].fits(needs):  # the graph's earlier nodes keep the old one
                lanes.append(Lane(self.dev, stream, needs))
            return lanes[-1]
        lane = self.by_stream.get(stream)
        if lane is None:
            lane = self.by_stream[stream] = Lane(self.dev, stream, keep=keep)
            if len(self.by_stream) > MAX_LANES:
                self._retire(self.by_stream.popitem(last=False)[1])
        elif len(self.by_stream) > 1:
            self.by_stream.move_to_end(stream)
        if keep is not None and lane.keep is None:
            lane.keep = keep
        if not lane.fits(needs):
            lane.grow(needs)
        return lane

    def _retire(self, lane: Lane) -> None:
        """Free an evicted lane once its stream is done (a stream destroyed since is done)."""
        drv = driver()
        with self.dev.setup():
            drv.cuStreamSynchronize(lane.stream)
            for event, buffers in lane.retired:
                drv.cuEventDestroy(event)
                buffers.clear()
            lane.buffers.clear()
            lane.state = None  # type: ignore[assignment]

    def synchronize(self) -> bool:
        """Wait for every eager lane's stream (not for captured graphs); False, without waiting,
        while any of them is being captured."""
        drv = driver()
        for stream in self.by_stream:
            err, status = drv.cuStreamIsCapturing(stream)
            if int(err) == 0 and status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE:
                return False
        with self.dev.setup():
            for stream in list(self.by_stream):
                err, = drv.cuStreamSynchronize(stream)
                if int(err) != 0:  # destroyed since: nothing of ours can be pending on it
                    del self.by_stream[stream]
        return True

    def release_captured(self) -> None:
        """Free the captured launches' lanes: only once no graph that holds them will run again."""
        with self.dev.setup():
            self.captured.clear()

    @property
    def nbytes(self) -> int:
        lanes = [*self.by_stream.values(), *(lane for group in self.captured.values() for lane in group)]
        return sum(lane.nbytes for lane in lanes)
