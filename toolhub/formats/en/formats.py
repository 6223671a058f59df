"""How the admin writes dates and times: to the second, with the zone, unambiguous
(``2026-11-26 14:21:07 UTC``), so records can be compared with logs and exports."""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
