import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from registry.services.audit_chain import audit_seal_all
from registry.services.audit_head import audit_head, audit_head_check


class Command(BaseCommand):
    help = (
        "Print the audit chain's head (sequence and hash), signed with TOOLHUB_AUDIT_SIGNING_KEY, "
        "to store outside the database. With --verify FILE_OR_JSON, check an earlier head: its "
        "signature, then recompute the chain from the first event (or a retention checkpoint) up "
        "to it and name the first event that was altered, deleted, inserted or moved. Exit status "
        "0 when the head is authentic and the chain up to it intact, 1 otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--verify", metavar="FILE_OR_JSON")
        parser.add_argument(
            "--no-seal", action="store_true", help="Do not seal pending events first."
        )

    def handle(self, *args, verify, no_seal, **options):
        if verify:
            text = verify
            if not verify.lstrip().startswith("{"):
                path = Path(verify)
                try:
                    text = path.read_text()
                except FileNotFoundError:
                    raise CommandError(
                        f"No such file: {verify} (give the head's file or its JSON)."
                    ) from None
                except (OSError, UnicodeDecodeError) as exc:
                    raise CommandError(f"Cannot read {verify}: {exc}") from None
            try:
                head = json.loads(text)
            except ValueError as exc:
                raise CommandError(f"Not a head (JSON expected): {exc}") from exc
            ok, message = audit_head_check(head if isinstance(head, dict) else {})
            if not ok:
                raise CommandError(f"FAIL: {message}", returncode=1)
            self.stdout.write(self.style.SUCCESS(f"PASS: {message}"))
            return
        if not no_seal:
            audit_seal_all()
        self.stdout.write(json.dumps(audit_head(), sort_keys=True))
