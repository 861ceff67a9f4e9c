"""Reading a server's Prometheus endpoint in tests: every sample as (name, labels, value)."""

from __future__ import annotations

import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

Samples = list[tuple[str, dict[str, str], float]]


def scrape(address: str) -> Samples:
    """The samples of ``http://{address}/metrics`` (RocketMQ's OpenMetrics text)."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("application/openmetrics-text")
        text = r.read().decode()
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None if absent)."""
    found = [v for n, ls, v in samples if n == name and labels.items() <= ls.items()]
    assert len(found) <= 1, f"{name} {labels} matches {len(found)} samples"
    return found[0] if found else None
