"""contend.subject.spec: `--impl`/`--kind` and what goes with them, held to every rule before
anything is imported."""

from __future__ import annotations

import pytest

from contend.errors import ContendError
from contend.subject.resolve import load
from contend.subject.spec import EVERY_KIND, Scope, SubjectSpec, parse_spec

LOCK = "tests.fixtures.foreign.redispy_lock:make"
TWO = Scope(
    named="registry or lock",
    kinds=("registry", "lock"),
    other_kind="--kind {label}: runs the registry and lock families, not {label} ({spec})",
)


def test_a_spec_holds_what_was_given_and_names_the_factory():
    spec = parse_spec(LOCK, "lock", EVERY_KIND, claim=["fencing"], masters=3, client_retries=2)
    assert spec == SubjectSpec(LOCK, "lock", ("fencing",), (), 3, None, 2)
    assert spec.name == LOCK
    assert parse_spec(None, None, EVERY_KIND) is None


@pytest.mark.parametrize(
    ("impl", "kind", "options", "message"),
    [
        (LOCK, None, {}, "needs --kind: the protocol it follows (registry or lock)"),
        (None, "lock", {}, "--kind lock names the protocol of --impl; give --impl MODULE:FACTORY too"),
        (LOCK, "single-flight", {}, "--kind single-flight: runs the registry and lock families"),
        (LOCK, "lock", {"claim": ["fifo-ish"]}, "--claim 'fifo-ish': a lock can claim"),
        (LOCK, "lock", {"masters": 4}, "an odd number of masters from 3 to 9"),
        (LOCK, "registry", {"masters": 3}, "--kind registry is not a lock"),
        (LOCK, "lock", {"masters": 3, "cluster": 3}, "choose one"),
        (LOCK, "lock", {"masters": 3, "redis_urls": ["redis://a"]}, "give it once per master"),
    ],
)
def test_each_rule_is_one_line_of_bad_input(impl, kind, options, message):
    with pytest.raises(ContendError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_spec(impl, kind, TWO, **options)


def test_load_imports_and_checks_the_signature_but_touches_no_server():
    spec = parse_spec(LOCK, "lock", EVERY_KIND, claim=["fencing"], no_claim=["clock-skew-safe"])
    subject = load(spec)
    assert subject.spec == spec and subject.capabilities is None
    assert subject.selector == (
        *("--impl", LOCK, "--kind", "lock"),
        *("--claim", "fencing", "--no-claim", "clock-skew-safe"),
    )
    assert "fencing" in subject.claims and "clock-skew-safe" not in subject.claims
    with pytest.raises(ContendError, match="a registry factory is called as"):
        load(SubjectSpec(LOCK, "registry"))
