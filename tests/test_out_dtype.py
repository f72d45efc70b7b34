"""C's dtype without a GPU: ``out_dtype`` parsed and keyed with the request, checked against the
inputs, carried by the decision into the kernels' parameter block (c_type), and the atomic fixup
refused on a 16-bit C."""

from __future__ import annotations

import numpy as np
import pytest

from streamk import ScheduleError
from streamk.gpu.decide import decide
from streamk.gpu.decide.operands import Operand
from streamk.gpu.request import dtype_name, request
from streamk.gpu.runtime.launch import C_ACC, C_BF16, C_F16, c_type
from streamk.target import preset


def _op(shape, dtype="float16"):
    return Operand(None, "cuda", 1 << 20, shape, (shape[1], 1), dtype)


def test_out_dtype_names_parse_and_key_the_request():
    assert dtype_name(None) is None
    assert dtype_name("float16") == dtype_name(np.float16) == dtype_name(np.dtype("float16")) == "float16"
    with pytest.raises(ScheduleError, match="out_dtype must be one of float32, float16, bfloat16, float64"):
        dtype_name("int8")
    plain, half = request(), request(options={"out_dtype": np.float16})
    assert half.out_dtype == "float16" and half.options == () and plain.out_dtype is None
    assert half.key != plain.key and half.key == request(options={"out_dtype": "float16"}).key


def test_the_decision_carries_c_dtype_to_the_parameter_block():
    target = preset("h200")
    a, b = _op((512, 256), "bfloat16"), _op((256, 384), "bfloat16")
    assert decide(a, b, None, target, request()).c_dtype == "float32"
    assert decide(a, b, None, target, request(options={"out_dtype": "bfloat16"})).c_dtype == "bfloat16"
    assert decide(a, b, _op((512, 384), "bfloat16"), target, request()).c_dtype == "bfloat16"
    assert (c_type("float32", "float32"), c_type("float64", "float64")) == (C_ACC, C_ACC)
    assert (c_type("float16", "float32"), c_type("bfloat16", "float32")) == (C_F16, C_BF16)
    with pytest.raises(ScheduleError, match="the atomic fixup adds partial tiles into C, which needs a float32 C"):
        decide(a, b, None, target, request("stream-k", "atomic", options={"out_dtype": "bfloat16", "grid": 7}))
    decide(a, b, None, target, request("stream-k", "atomic", options={"grid": 7}))  # FP32 C: fine
