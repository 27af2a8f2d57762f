"""The model zoo: random-weight models from `transformers` configs and an Inception-v3 network,
at a small size (tests, under the Triton interpreter) and at their real sizes (benchmarks/models.py).

`ZOO[name].build(size)` returns a `ZooCase`: the module (eval, random weights from a fixed seed,
in its dtype and memory format), its example inputs and the capture wrapper's name. Nothing is
downloaded: every model is built from a config.
"""

from tests.zoo.models import SIZES, ZOO, ZooCase, ZooModel, build

__all__ = ["SIZES", "ZOO", "ZooCase", "ZooModel", "build"]
