"""Language-model machinery for DP-MLM and DP-Prompt (Meisenbacher et al. 2024; Utpala et al. 2023).

Modules: :mod:`loading` (models by name/path, the packaged SmolLM2 GGUF cached as fp32
safetensors), :mod:`candidates` (the fixed output set), :mod:`alignment` (words to tokens),
:mod:`sampling` (the clipped exponential mechanism), :mod:`masked` and :mod:`causal` (the two
scoring backends), :mod:`bounds` (clip bounds: calibration, shipped defaults, lookup).
torch and transformers are imported inside functions only, so ``import dptext`` stays fast.
"""
