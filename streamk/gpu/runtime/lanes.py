"""Lanes: the device memory one stream's launches may share, and no other stream's.

A Stream-K launch writes partial tiles to a workspace, raises flags, counts arrivals and bumps
an epoch; two launches that shared any of it while running at once would read each other's
partials or flags. Launches on one stream never run at once, so each stream gets its own
``Lane``: an epoch/done word, flags, counters, workspace and the packed-operand copies, each
grown (never shrunk) to the largest launch seen on that stream. A launch captured into a CUDA
graph gets a private lane of its exact size (the graph may be replayed on any stream at any time;
launches of one capture sequence on one stream share it while it fits, as they run in order),
held with the plans it runs by a ``GraphHold`` for exactly as long as the graph lives. Memory no
launch can still use is freed: a grown lane's old buffers once the stream has passed an event
recorded at the growth, a graph's lanes once the graph and every instantiation of it are gone.

Launches whose waits need CTAs that are not yet resident (``waits_only_backward`` is false:
e.g. owner-waits Stream-K) are also ordered against each other device-wide, through one event:
two such launches sharing the SMs could each hold slots the other's missing CTAs need.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass

from .device import Buffer, Device, driver
from ..errors import check

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
HOST = ("host_a", "host_b", "host_c")  # NumPy staging: each Prepared owns its own (prepared.py), not the lane


def lane_bytes(needs: Needs) -> dict[str, int]:
    """The buffers a lane holds for ``needs``, by name (entries for flags and counters)."""
    return {name: getattr(needs, name) for name in Needs.__slots__ if name not in HOST}


class Lane:
    """One stream's buffers (``ptr(name)``), epoch word and an event to retire old buffers by."""

    def __init__(self, dev: Device, stream: int, needs: Needs | None = None, keep: object = None) -> None:
        dev.refuse_foreign_stream(stream)
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
                and needs.pack_a <= have.pack_a and needs.pack_b <= have.pack_b)

    def grow(self, needs: Needs, *, exact: bool = False) -> None:
        """Replace every buffer smaller than ``needs`` (at least doubling, unless ``exact``); the
        old ones are freed once this stream has passed the launches that may use them."""
        drv = driver()
        old, sizes = [], {}
        for name, want in lane_bytes(needs).items():
            have = getattr(self.have, name)
            sizes[name] = have
            if want > have:
                size = want if exact else max(want, 2 * have)
                sizes[name] = size
                unit = 4 if name == "flags" else 8 if name == "counters" else 1
                if name in self.buffers:
                    old.append(self.buffers[name])
                self.buffers[name] = self.dev.alloc(size * unit, zero=name in ZEROED)
        if old:
            with self.dev.entered():
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


_LIBC = ctypes.CDLL(None, use_errno=True)
_SEM_POST = ctypes.cast(_LIBC.sem_post, ctypes.c_void_p).value  # the user objects' destructor: no Python


class GraphHold:
    """What one capture sequence's launches use (their lanes, by stream, and their plans), held
    until the CUDA graph they were captured into and every instantiation of it are destroyed.

    The graph retains a CUDA user object whose destructor is libc's ``sem_post`` on a semaphore of
    ours: the driver's thread runs it without Python (no GIL, no CUDA call), and ``released`` reads
    the semaphore."""

    def __init__(self, dev: Device, graph: object) -> None:
        drv = driver()
        self.sem = (ctypes.c_long * 8)()  # a sem_t (32 bytes on glibc), 8-byte aligned
        if _LIBC.sem_init(self.sem, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "sem_init failed")
        with dev.entered():
            obj = check(drv.cuUserObjectCreate(ctypes.addressof(self.sem), drv.CUhostFn(_SEM_POST), 1,
                                               drv.CUuserObject_flags.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
                        "cuUserObjectCreate")
            check(drv.cuGraphRetainUserObject(graph, obj, 1, drv.CUuserObjectRetain_flags.CU_GRAPH_USER_OBJECT_MOVE),
                  "cuGraphRetainUserObject")
        self.lanes: dict[int, list[Lane]] = {}
        self.plans: dict[int, object] = {}

    @property
    def released(self) -> bool:
        value = ctypes.c_int(0)
        _LIBC.sem_getvalue(self.sem, ctypes.byref(value))
        return value.value > 0

    def lane(self, dev: Device, stream: int, needs: Needs) -> Lane:
        lanes = self.lanes.setdefault(stream, [])
        if not lanes or not lanes[-1].fits(needs):  # the graph's earlier nodes keep the old one
            lanes.append(Lane(dev, stream, needs))
        return lanes[-1]

    @property
    def nbytes(self) -> int:
        return sum(lane.nbytes for group in self.lanes.values() for lane in group)


class Lanes:
    """A device's lanes: one per stream seen (least recently used first), and the graph holds of
    captured launches."""

    def __init__(self, dev: Device) -> None:
        drv = driver()
        self.dev = dev
        self.by_stream: OrderedDict[int, Lane] = OrderedDict()
        self.holds: dict[int, GraphHold] = {}  # capture id -> what its graph holds
        with dev.entered():
            self.coresident = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")

    def for_launch(self, stream: int, needs: Needs, capture: tuple[int, object] | None, keep: object = None,
                   plan: object = None) -> Lane:
        """The lane a launch on ``stream`` uses; ``capture``: (id, graph) of the capture sequence the
        stream is in, or None (then ``plan`` is held by the graph too); ``keep``: the object owning
        the stream, held while the lane lives, since later synchronizations call the driver with the
        handle (a destroyed one can crash it)."""
        if capture is not None:
            hold = self.holds.get(capture[0])
            if hold is None:
                self.reap_captured()
                hold = self.holds[capture[0]] = GraphHold(self.dev, capture[1])
            hold.plans[id(plan)] = plan
            return hold.lane(self.dev, stream, needs)
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
            lane.retired.clear()
            lane.buffers.clear()
            lane.keep = None

    def retire_all(self) -> None:
        """Free every eager lane (after ``synchronize``): the next launch on a stream makes a new one."""
        while self.by_stream:
            self._retire(self.by_stream.popitem(last=False)[1])

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

    def reap_captured(self) -> int:
        """Free the holds of graphs that are gone; the number of holds still alive."""
        gone = [capture for capture, hold in self.holds.items() if hold.released]
        if gone:
            with self.dev.setup():
                for capture in gone:
                    del self.holds[capture]
        return len(self.holds)

    @property
    def captured_lanes(self) -> int:
        return sum(len(group) for hold in self.holds.values() for group in hold.lanes.values())

    @property
    def nbytes(self) -> int:
        return sum(lane.nbytes for lane in self.by_stream.values()) + sum(h.nbytes for h in self.holds.values())
