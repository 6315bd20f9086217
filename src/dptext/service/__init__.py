"""``dptext serve``: a privatization service with owners, API keys and per-person budgets, and
a web page to try it (docs/service.md).

Modules: ``keys`` (API keys stored as salted scrypt hashes in the ledger database),
``limits`` (request limits and a per-key rate limit), ``pool`` (fitted mechanisms shared by
all requests; LM requests grouped into batches), ``spans`` (which characters of an output were
privatized, kept, or replaced as out-of-vocabulary, and why), ``jobs`` (file jobs that survive
a restart), ``app`` (the FastAPI application). The commands ``dptext serve`` and ``dptext keys``
are in :mod:`dptext.cli.service`.
"""
