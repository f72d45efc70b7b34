"""streamk: the Stream-K GEMM work decomposition (Osama et al., PPoPP 2023), end to end.

One ``Schedule`` (per CTA, ordered MAC-iteration ranges) from pluggable schedulers, executed
exactly by a NumPy executor, timed by an SM simulator, and run as a table on the GPU.
"""

from .costs import AUTO_COSTS, IDEAL, Costs
from .errors import CudaError, DeadlockError, ScheduleError, StreamkError
from .executor import execute
from .fixup import Action, FixupPlan, plan_fixup
from .schedule import FIXUP_POLICIES, Schedule, WorkUnit
from .sched import make_schedule, names as decompositions, register
from .shapes import GemmShape, Machine, Problem, TileShape

__version__ = "0.1.0"

__all__ = [
    "Action", "AUTO_COSTS", "Costs", "CudaError", "DeadlockError", "FIXUP_POLICIES", "FixupPlan",
    "GemmShape", "IDEAL", "Machine", "Problem", "Schedule", "ScheduleError", "StreamkError",
    "TileShape", "WorkUnit", "decompositions", "execute", "make_schedule", "plan_fixup", "register",
]
