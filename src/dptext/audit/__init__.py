"""Statistical audits of the privacy dptext claims (docs/audit.md).

* :func:`audit` - black-box: an empirical lower bound on a mechanism's privacy loss from its own
  outputs (Clopper-Pearson, Bonferroni over the pairs tested), next to the epsilon it claims.
* :func:`audit_exact` - the exact worst log-ratio from ``distribution()`` where it exists.
* :func:`dptext.audit.training.audit_training` - a canary audit of private federated training
  (Jagielski et al. 2020; Nasr et al. 2021) against the accountant's epsilon.
"""

from dptext.audit.auditor import audit, audit_exact
from dptext.audit.pairs import Pair
from dptext.audit.results import CONSISTENT, NOT_TESTABLE, VIOLATION, AuditResult

__all__ = ["CONSISTENT", "NOT_TESTABLE", "VIOLATION", "AuditResult", "Pair", "audit", "audit_exact"]
