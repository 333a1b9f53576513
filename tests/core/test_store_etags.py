"""store/etags.py: the GitHub ETag cache table, read and written through store functions."""

from __future__ import annotations

from pathlib import Path

from the_loop.store import etags, open_database
from the_loop.store.etags import EtagEntry


def test_put_get_replace_delete_prune_count(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    assert etags.get(db, "k") is None and etags.count(db) == 0
    etags.put(db, "k", EtagEntry('"a"', b'[{"x": 1}]', '<u>; rel="next"', 100.0))
    etags.put(db, "k", EtagEntry('"b"', b"[]", None, 200.0))
    etags.put(db, "old", EtagEntry('"c"', b"{}", None, 10.0))
    assert etags.get(db, "k") == EtagEntry('"b"', b"[]", None, 200.0)
    assert etags.count(db) == 2
    assert etags.delete_before(db, 50.0) == 1 and etags.get(db, "old") is None
    etags.delete(db, "k")
    etags.delete(db, "k")
    assert etags.count(db) == 0
    assert open_database(tmp_path) is not db and etags.count(open_database(tmp_path)) == 0
