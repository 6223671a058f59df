"""Run a module or script against the code in $TOOLHUB_BENCH_SRC only (``governed_vs_direct.py --ref``).

The virtualenv holds an editable install of /work/main; its import hook would
fill in modules missing from an older export (e.g. an untracked file of the
working tree). This removes the hook, puts the export first on sys.path, then
runs the target like ``python -m MODULE ...`` or ``python SCRIPT ...``:

    python bench/_launch.py -m gunicorn toolhub.wsgi:application ...
    python bench/_launch.py manage.py migrate
"""

from __future__ import annotations

import os
import runpy
import sys


def _drop_editable_hooks() -> None:
    def editable(obj) -> bool:
        owner = getattr(obj, "__module__", "") or ""
        owner = owner or getattr(getattr(obj, "__self__", None), "__module__", "") or ""
        return owner.startswith("__editable__")

    sys.meta_path[:] = [f for f in sys.meta_path if not editable(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not editable(h)]
    sys.path[:] = [p for p in sys.path if not p.startswith("__editable__")]
    sys.path_importer_cache.clear()


def main() -> None:
    src = os.environ["TOOLHUB_BENCH_SRC"]
    _drop_editable_hooks()
    sys.path.insert(0, src)
    args = sys.argv[1:]
    if args[:1] == ["-m"]:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
