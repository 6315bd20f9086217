"""The exact search on a GPU (``device="cuda"``): ExactSearch with the float32 GEMM and
top-two in torch, TF32 off for the call (so the float32 error bound holds), the near ties
re-checked in float64 on the CPU exactly as on the CPU."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms.search.exact import ExactSearch


class TorchExactSearch(ExactSearch):
    """:class:`ExactSearch` with the float32 GEMM and top-two in torch on ``device``."""

    @classmethod
    def build(cls, name, vectors, *, fingerprint=None, **options):
        return cls(vectors, device="cuda", **options)

    def __init__(self, vectors: np.ndarray, *, device: str = "cuda", block: int = 4096) -> None:
        import warnings

        import torch

        super().__init__(vectors, block=block)
        self.device = torch.device(device)
        with warnings.catch_warnings():  # a read-only (mapped) space: the tensor is only read
            warnings.simplefilter("ignore", UserWarning)
            self._words = torch.from_numpy(self.words).to(self.device)
        self._half_sq32 = torch.from_numpy(self.half_sq32).to(self.device)

    def search_blocks(self, n: int, points_of: Callable[[int, int], np.ndarray], *,
                      unit: int = 1) -> np.ndarray:
        """All ``n`` points made at once (the GPU searches them in its own blocks)."""
        return self(points_of(0, n)) if n else np.empty(0, dtype=np.int64)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        import torch

        points64 = np.asarray(points, dtype=np.float64)
        n, m = len(points64), len(self.words)
        out = np.empty(n, dtype=np.int64)
        if n == 0:
            return out
        if m == 0:
            raise DPTextError("cannot search an empty vocabulary")
        bound2 = 2.0 * self.error_bound(np.linalg.norm(points64, axis=1))
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # the error bound is for float32
        try:
            for s in range(0, n, self.block):
                p = points64[s: s + self.block].astype(np.float32)
                sc = torch.from_numpy(p).to(self.device) @ self._words.T
                sc -= self._half_sq32
                if m >= 2:
                    top, arg = sc.topk(2, dim=1)
                    best, second = top[:, 0].cpu().numpy(), top[:, 1].cpu().numpy()
                else:
                    top, arg = sc.max(1, keepdim=True)
                    best = top[:, 0].cpu().numpy()
                    second = np.full(len(p), -np.inf, dtype=np.float32)
                out[s: s + len(p)] = arg[:, 0].cpu().numpy()
                close = np.flatnonzero(best.astype(np.float64) - second < bound2[s: s + len(p)])
                for k in close:
                    out[s + k] = self._recheck(points64[s + k], p[k], float(best[k]),
                                               float(bound2[s + k]))
                self.rechecked += len(close)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        return out
