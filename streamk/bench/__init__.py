"""The benchmark harness behind ``streamk bench``: it imports the library (``streamk.gpu``), never the
other way round. ``variants`` (the ``--decomps`` text to ``prepare()`` arguments), ``args`` (the
command's options, checked without a GPU) and ``harness`` (CUDA-event timing against cuBLAS; needs
PyTorch and a GPU)."""
