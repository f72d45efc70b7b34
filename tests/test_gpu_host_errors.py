"""Without a GPU: streamk.gpu imports, checks operands first, and says in one error what is missing."""

import numpy as np
import pytest

from streamk.errors import CudaError, ScheduleError, StreamkError
from streamk.gpu import available, gemm, prepare


def test_operand_errors_come_before_any_cuda_call():
    with pytest.raises(ScheduleError, match="same dtype"):
        gemm(np.ones((4, 4), np.float16), np.ones((4, 4), np.float64))
    with pytest.raises(ScheduleError, match="inner dimensions must agree"):
        prepare(np.ones((4, 4), np.float16), np.ones((5, 4), np.float16))
    with pytest.raises(ScheduleError, match="schedule must be"):
        gemm(np.ones((4, 4), np.float16), np.ones((4, 4), np.float16), schedule=3)
    # unknown names, as the scheduler registry and the Schedule name them
    with pytest.raises(ScheduleError, match="unknown decomposition 'streamk'; choose one of: data-parallel"):
        gemm(np.ones((4, 4), np.float16), np.ones((4, 4), np.float16), schedule="streamk")
    with pytest.raises(ScheduleError, match="fixup must be one of"):
        prepare(np.ones((4, 4), np.float16), np.ones((4, 4), np.float16), schedule="stream-k", fixup="owner-wait")


@pytest.mark.skipif(available()[0], reason="a GPU is present")
def test_no_gpu_is_one_streamk_error_naming_what_is_missing():
    with pytest.raises(CudaError, match="no usable GPU: ") as info:
        gemm(np.ones((4, 4), np.float16), np.ones((4, 4), np.float16))
    assert isinstance(info.value, StreamkError) and available()[1] in str(info.value)

