"""Calibration: the simulator's cost terms measured in microseconds for one kernel on one device.

``model`` (the Calibration value), ``files`` (JSON per device family, loaded into the Target),
``design`` (the controlled Schedules that isolate each term), ``fit`` (Gauss-Newton on the
simulator's time, with standard errors), ``predict`` (the calibrated simulator), ``fidelity``
(predicted against measured, shape by shape) and ``device`` (CUDA-event timing; GPU only).
This package imports only the light ``model`` and ``files`` itself, so the Target can load files.
"""

from .model import Calibration, Term

__all__ = ["Calibration", "Term"]
