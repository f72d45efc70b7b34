"""The device runtime: what binds a decision to a GPU and launches it, and who owns what there.

``device`` (the CUDA device: context, modules, memory), ``lanes`` (per-stream and per-graph
buffers), ``launch`` and ``tma`` (parameter blocks, TMA maps, one kernel's launch), ``bind`` and
``plan`` (a Decision bound to a device: the GemmPlan), ``device_runtime`` (the one owner of a
device's state and the one way to launch on it), ``prepared`` and ``api`` (the public calls),
``torch_op`` (torch.compile's op) and ``timing``. Importing this package imports none of them.
"""
