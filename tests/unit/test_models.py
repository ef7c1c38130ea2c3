"""Filters, dates, ids and prefixes: pure parsing and validation."""

from __future__ import annotations

import hashlib

import pytest

from reme_es.core.checks import validate_prefix
from reme_es.core.errors import ConfigError, InvalidFilter
from reme_es.core.models import MAX_ID_BYTES, SearchFilter, date_from_path, doc_id


@pytest.mark.parametrize(
    ("path", "date"),
    [
        ("daily/2026-05-18.md", "2026-05-18"),
        ("daily/2026-05-18/notes.md", "2026-05-18"),
        ("resource/2026-06-06/report.pdf", "2026-06-06"),
        ("daily/2026-05-18.txt", None),
        ("daily/2026-02-30.md", None),
        ("2026-05-18.md", None),
        ("digest/indexing.md", None),
    ],
)
def test_date_from_path_follows_reme(path, date):
    assert date_from_path(path) == date


def test_filter_parse_collects_reme_keys():
    f = SearchFilter.parse(
        {
            "path": "a.md",
            "paths": ["b.md"],
            "prefix": "daily/",
            "path_prefixes": ["digest/"],
            "start_date": "2026-05-01",
            "strict_date_filter": 1,
            "metadata": {"kind": "note"},
            "tag": ["x", "y"],
        }
    )
    assert f.paths == ["a.md", "b.md"]
    assert f.prefixes == ["daily/", "digest/"]
    assert (f.start_date, f.end_date, f.strict_date) == ("2026-05-01", None, True)
    assert f.metadata == {"kind": ["note"], "tag": ["x", "y"]}
    assert SearchFilter.parse(None).empty and SearchFilter.parse({}).empty
    assert not SearchFilter.parse({"paths": []}).empty


@pytest.mark.parametrize(
    "raw", [[1], {"metadata": []}, {"start_date": "yesterday"}, {"k": {"a": 1}}, {"k": [[1]]}, {"": 1}, {"path": 3}]
)
def test_bad_filters_are_named(raw):
    with pytest.raises(InvalidFilter):
        SearchFilter.parse(raw)


@pytest.mark.parametrize(
    "raw, message",
    [
        # a string flag was read as truthy: "false" filtered strictly
        ({"strict_date_filter": "false"}, "filter 'strict_date_filter' must be true or false, got 'false'"),
        ({"strict_date_filter": 2}, "filter 'strict_date_filter' must be true or false, got 2"),
        # only the first 10 characters were read: the rest was dropped
        (
            {"end_date": "2026-05-18garbage"},
            "filter 'end_date' must be a date written YYYY-MM-DD, got '2026-05-18garbage'",
        ),
        # NaN and infinity have no JSON form: the term sent was "null", which is no number
        ({"score": float("nan")}, "filter 'score': nan has no JSON form to match; give a finite number"),
        (
            {"metadata": {"score": [1, float("inf")]}},
            "filter 'score': inf has no JSON form to match; give a finite number",
        ),
    ],
)
def test_filters_the_store_would_misread_are_refused_with_the_value(raw, message):
    with pytest.raises(InvalidFilter) as err:
        SearchFilter.parse(raw)
    assert str(err.value) == message


def test_flags_and_date_times_are_read_as_given():
    assert SearchFilter.parse({"strict_date_filter": False}).strict_date is False
    assert SearchFilter.parse({"strict_date_filter": None}).strict_date is False
    assert SearchFilter.parse({"strict_date_filter": 0}).strict_date is False
    assert SearchFilter.parse({"start_date": "2026-05-18T23:30:00+02:00"}).start_date == "2026-05-18"
    assert SearchFilter.parse({"start_date": "2026-05-18 10:00"}).start_date == "2026-05-18"
    assert SearchFilter.parse({"score": 0.5}).metadata == {"score": [0.5]}


def test_long_ids_are_hashed_short_ids_kept():
    assert doc_id("digest/a.md") == "digest/a.md"
    at_limit = "x" * MAX_ID_BYTES  # 512 bytes: the longest key kept as it is
    assert doc_id(at_limit) == at_limit
    long = "x/" + "é" * 300  # 602 bytes in UTF-8, though only 302 characters
    assert doc_id(long) == "sha256:" + hashlib.sha256(long.encode("utf-8")).hexdigest()
    # pinned: ids already stored in an index must come out the same after any change
    assert doc_id(long) == "sha256:e14b029c31d43897037b8d565c10cc67b037303e9b34d19a8fe95149f823b5db"
    assert len(doc_id(long).encode("utf-8")) == 71 <= MAX_ID_BYTES
    others = [at_limit + "y", long + "!", "x/" + "é" * 301, "y/" + "é" * 300]
    ids = [doc_id(k) for k in [long, *others]]
    assert all(i.startswith("sha256:") for i in ids) and len(set(ids)) == len(ids)


@pytest.mark.parametrize("bad", ["", "*", "_all", "a,b", "a..b", "Upper", "x" * 201, "-lead", "a b", "a/b"])
def test_dangerous_prefixes_are_refused(bad):
    with pytest.raises(ConfigError):
        validate_prefix(bad)


def test_good_prefix():
    assert validate_prefix("reme-es_ws-1a2b") == "reme-es_ws-1a2b"
