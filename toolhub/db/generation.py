"""The registry's generation counter, as the database connection reads it.

Triggers on every registry table bump one row (``toolhub_registry_generation``,
created by a registry migration); processes keep registry reads in memory until
it moves. The PostgreSQL backend reads it as its connection health check, so the
constants live here, below the apps that use them.
"""

GENERATION_SQL = "SELECT value FROM toolhub_registry_generation WHERE id = 1"
NOT_CHECKED = object()  # no health check read the generation in this request
