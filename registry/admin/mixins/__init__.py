"""Admin plumbing shared by the registry and executions admins.

Big tables (executions, audit events) use ``NoCountAdminMixin``: no
``COUNT(*)`` for the paginator, no facet counts, no "show all", no
``date_hierarchy`` (its ``SELECT DISTINCT`` dates scan the whole table) but a
``TimeRangeFilter`` instead, and filters that never load every related row
(``InputFilter``: a small text box). ``ExportAdminMixin`` streams the current
changelist, exactly as filtered, as CSV or JSON Lines.

Every changelist is a ``GuardedChangeList`` (``GuardedChangeListMixin``): a
filter either applies or is refused, with a message and no rows, never
ignored (which would show every row) and never a server error."""

from registry.admin.mixins.autocomplete import (
    KeyCheckedAutocompleteMixin,
    KeyCheckedAutocompleteSelect,
    KeyCheckedAutocompleteSelectMultiple,
)
from registry.admin.mixins.changelists import (
    GuardedChangeList,
    GuardedChangeListMixin,
    NoCountAdminMixin,
    NoCountChangeList,
    NoCountPaginator,
    lookup_problem,
)
from registry.admin.mixins.exports import ExportAdminMixin
from registry.admin.mixins.filters import (
    InputFilter,
    TimeRangeFilter,
    previous_quarter_start,
    quarter_start,
    time_range_filter,
)
from registry.admin.mixins.read_only import ReadOnlyAdminMixin
from registry.admin.mixins.service_writes import (
    PlatformAdminWritesMixin,
    ServiceErrorsMixin,
    report_service_error,
)

__all__ = [
    "ExportAdminMixin",
    "GuardedChangeList",
    "GuardedChangeListMixin",
    "InputFilter",
    "KeyCheckedAutocompleteMixin",
    "KeyCheckedAutocompleteSelect",
    "KeyCheckedAutocompleteSelectMultiple",
    "NoCountAdminMixin",
    "NoCountChangeList",
    "NoCountPaginator",
    "PlatformAdminWritesMixin",
    "ReadOnlyAdminMixin",
    "ServiceErrorsMixin",
    "TimeRangeFilter",
    "lookup_problem",
    "previous_quarter_start",
    "quarter_start",
    "report_service_error",
    "time_range_filter",
]
