"""SanText sampling rate at one epsilon, for comparing two versions of the code side by side
(run it once with each version's src first on the path; the "old" mode uses the tables already in
the on-disk cache and exits if there are none, the "new" mode fits in memory).

    for v in old new old new; do P=$([ $v = old ] && echo /work/main/src || echo src)
      OMP_NUM_THREADS=1 PYTHONPATH=$P .venv/bin/python benchmarks/bench_santext_sampling.py 8.0 $v
    done
"""
import sys, time, numpy as np, torch
torch.set_num_threads(1)
from dptext.mechanisms.santext import SanText
from dptext.resources import default_space
from dptext.mechanisms.frequency import frequency_order
space = default_space(progress=False)
m = SanText(epsilon=float(sys.argv[1]), space=space)
path = m._cache_path(space)
print(sys.argv[2], "cached tables:", path.is_file())
if sys.argv[2] == "old" and not path.is_file():
    sys.exit()
m.fit(cache=sys.argv[2] == "old")
rows = np.asarray(frequency_order(space)[:20000])
rows = rows[np.random.default_rng(0).integers(0, len(rows), 200000)]
for _ in range(2):
    t0 = time.perf_counter(); m._sample(rows, np.random.default_rng(1)); dt = time.perf_counter() - t0
    print(sys.argv[2], f"eps={sys.argv[1]} sampling {len(rows)/dt:,.0f} tokens/s")
