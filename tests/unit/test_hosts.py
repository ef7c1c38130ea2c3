"""Host URLs: only http:// and https:// pass, whoever builds the settings (issue 15, defect 4)."""

from __future__ import annotations

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.checks import validate_hosts
from reme_es.core.errors import ConfigError


def test_http_and_https_pass_normalised():
    assert validate_hosts(" http://a:9200/, HTTPS://b:9200 ") == ["http://a:9200", "HTTPS://b:9200"]
    assert ClientSettings(["https://a:9200/"]).hosts == ["https://a:9200"]


@pytest.mark.parametrize(
    ("host", "message"),
    [
        (
            "htps://127.0.0.1:9200",
            "host 'htps://127.0.0.1:9200' has the unknown scheme 'htps': use http:// or https://",
        ),
        ("ftp://u:secret@h:9200", "host 'ftp://u:***@h:9200' has the unknown scheme 'ftp': use http:// or https://"),
        ("127.0.0.1:9200", "host '127.0.0.1:9200' needs a scheme, e.g. http://127.0.0.1:9200 or https://..."),
        ("http:///x", "host 'http:///x' has no host name"),
    ],
)
def test_other_schemes_are_refused_naming_the_bad_one_and_the_valid_ones(host, message):
    with pytest.raises(ConfigError) as err:
        validate_hosts(host)
    assert str(err.value).startswith(message)
    assert "secret" not in str(err.value)
    with pytest.raises(ConfigError):
        ClientSettings([host])
