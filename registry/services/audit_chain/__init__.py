"""The audit log's hash chain: sealing, verification, and a signed head to anchor outside.

Events are written without a hash (so writers never wait on each other) and
a sealer appends them to the chain in id order, in batches: each sealed event
gets the next ``sequence``, the previous event's hash as ``prev_hash``, and
``hash = sha256(prev_hash + "|" + canonical JSON of its content)``. The sealer
runs every few seconds (beat) and in-process after each commit in the
embedded mode. ``audit_verify`` recomputes the chain from the start or from
the latest retention checkpoint and names the first event that does not fit;
``audit_head_check`` runs the same walk up to a signed head kept outside.

Events carry a MAC made when they are written (``audit_auth``); an
authenticated event's hash also covers its MAC and ``actor_ref``. The sealer
refuses an event whose MAC does not verify, or that has none once the chain
holds authenticated events: such a row was written behind ToolHub's back. It
marks it (``sealed_at`` set, no ``sequence``), never seals it, and
``audit_verify`` names it. It also MACs each event's sequence and hash
(``seal_mac``): the hashes alone can be recomputed after an event is deleted."""

from registry.services.audit_chain.hashing import (
    AUTH_FIELDS,
    CONTENT_FIELDS,
    GENESIS,
    canonical_content,
    event_hash,
)
from registry.services.audit_chain.record_checks import (
    duplicate_identities,
    record_check_register,
    unsealed_forgeries,
)
from registry.services.audit_chain.report import (
    Problem,
    VerifyReport,
)
from registry.services.audit_chain.sealing import (
    SEAL_GRACE,
    audit_seal_all,
)
from registry.services.audit_chain.verification import audit_verify
from registry.services.audit_chain.walking import (
    Walk,
    walk_chain,
)

__all__ = [
    "AUTH_FIELDS",
    "CONTENT_FIELDS",
    "GENESIS",
    "SEAL_GRACE",
    "Problem",
    "VerifyReport",
    "Walk",
    "audit_seal_all",
    "audit_verify",
    "canonical_content",
    "duplicate_identities",
    "event_hash",
    "record_check_register",
    "unsealed_forgeries",
    "walk_chain",
]
