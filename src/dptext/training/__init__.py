"""Private training of language models: UeDP-Alg, user-level DP-FedAvg and baselines.

Modules: ``corpus`` (users -> sentences, entities E, extended set S), ``sampling`` (the per-round
Poisson sampling of Algorithm 1), ``lstm`` (a vmap-able LSTM language model), ``causal_lm``
(a pretrained causal LM such as SmolLM2 fine-tuned on its last blocks), ``federated``
(local training of many users at once, clipping, the estimators), ``trainer`` (the round loop),
``canary`` (exposure, Carlini et al. 2019).
"""
