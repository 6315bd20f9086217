"""The package's version (ground floor: the provenance of a job and a ledger's entries name it
without importing the whole package)."""

__version__ = "0.1.0"
